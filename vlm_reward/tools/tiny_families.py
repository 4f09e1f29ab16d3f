"""The per-family half of the tiny checkpoints: a toy-size config and the real processor classes.

:mod:`vlm_reward.tools.tiny_checkpoint` builds the shared half (tokenizer, chat template,
generation config, seeded weights, the CLI); what differs between Qwen2.5-VL and Qwen3-VL
is here, one :class:`TinyFamily` per :class:`~vlm_reward.judging.model_family.ModelFamily`, so
adding a family is one entry, not a branch.

Sizes: head dims are 32 (vLLM's CPU attention kernels take multiples of 32), two layers,
width 64. ``mrope_section`` is the real model's split scaled to head_dim 32 (it must sum to
head_dim / 2): Qwen2.5-VL's [16, 24, 24] -> [4, 6, 6], Qwen3-VL's [24, 20, 20] -> [6, 5, 5].
Processor settings are the real checkpoints' ``preprocessor_config.json`` /
``video_preprocessor_config.json`` values (pixel bounds, patch geometry, normalisation), so
the tiny processor resizes, patches and counts tokens as the real one does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vlm_reward.judging.model_family import QWEN2_5_VL, QWEN3_VL, ModelFamily


@dataclass(frozen=True)
class TinyFamily:
    """How to build the tiny checkpoint of one family.

    ``config_class`` and ``processor_class`` are transformers class names;
    ``image_processor`` / ``video_processor`` are ``(class name, kwargs)``; ``text`` and
    ``vision`` the toy sizes beyond the ones every family shares; ``default_system_prompt``
    is the system turn the real chat template adds when a conversation has none (Qwen3-VL's
    adds none).
    """

    family: ModelFamily
    config_class: str
    processor_class: str
    image_processor: tuple[str, Mapping[str, Any]]
    video_processor: tuple[str, Mapping[str, Any]]
    text: Mapping[str, Any]
    vision: Mapping[str, Any]
    default_system_prompt: str | None


def _geometry(family: ModelFamily) -> dict[str, int]:
    return {
        "patch_size": family.patch_size,
        "temporal_patch_size": family.temporal_patch_size,
        "merge_size": family.merge_size,
    }


TINY_QWEN2_5_VL = TinyFamily(
    family=QWEN2_5_VL,
    config_class="Qwen2_5_VLConfig",
    processor_class="Qwen2_5_VLProcessor",
    # The 7B preprocessor's pixel bounds (min 56 x 56, max 16384 tokens).
    image_processor=(
        "Qwen2VLImageProcessorFast",
        {"min_pixels": 56 * 56, "max_pixels": 28 * 28 * 16384, **_geometry(QWEN2_5_VL)},
    ),
    video_processor=(
        "Qwen2VLVideoProcessor",
        {"min_pixels": 56 * 56, "max_pixels": 28 * 28 * 16384, **_geometry(QWEN2_5_VL)},
    ),
    text={"rope_theta": 1000000.0, "rope_scaling": {"type": "mrope", "mrope_section": [4, 6, 6]}},
    vision={
        "fullatt_block_indexes": [1],
        "window_size": 112,
        # Seconds -> M-RoPE temporal positions; the 7B checkpoint uses 2 (the class default is 4).
        "tokens_per_second": 2,
        "spatial_merge_size": QWEN2_5_VL.merge_size,
    },
    default_system_prompt="You are a helpful assistant.",
)

TINY_QWEN3_VL = TinyFamily(
    family=QWEN3_VL,
    config_class="Qwen3VLConfig",
    processor_class="Qwen3VLProcessor",
    # Qwen3-VL-4B/8B: images 256x256 .. 4096x4096 pixels, videos bounded over all frames.
    image_processor=(
        "Qwen2VLImageProcessorFast",
        {
            "size": {"shortest_edge": 65536, "longest_edge": 16777216},
            "image_mean": [0.5, 0.5, 0.5],
            "image_std": [0.5, 0.5, 0.5],
            **_geometry(QWEN3_VL),
        },
    ),
    video_processor=(
        "Qwen3VLVideoProcessor",
        {
            "size": {"shortest_edge": 4096, "longest_edge": 25165824},
            "image_mean": [0.5, 0.5, 0.5],
            "image_std": [0.5, 0.5, 0.5],
            **_geometry(QWEN3_VL),
        },
    ),
    text={
        "head_dim": 32,
        "rope_theta": 5000000.0,
        "rope_scaling": {"rope_type": "default", "mrope_section": [6, 5, 5], "mrope_interleaved": True},
    },
    vision={
        # A square grid of learned position embeddings (the 4B's is 48 x 48), and the
        # DeepStack merger fed from the first block (the 4B's from blocks 5, 11 and 17).
        "num_position_embeddings": 64,
        "deepstack_visual_indexes": [0],
        "spatial_merge_size": QWEN3_VL.merge_size,
    },
    default_system_prompt=None,
)

TINY_FAMILIES: Mapping[str, TinyFamily] = {t.family.model_type: t for t in (TINY_QWEN2_5_VL, TINY_QWEN3_VL)}


def tiny_family(model_type: str) -> TinyFamily:
    """The tiny builder of family ``model_type``; ``ValueError`` naming the ones there are."""
    if model_type not in TINY_FAMILIES:
        raise ValueError(
            f"no tiny checkpoint for model family {model_type!r}; choose one of {', '.join(TINY_FAMILIES)}."
        )
    return TINY_FAMILIES[model_type]


def build_processor(tiny: TinyFamily, tokenizer: Any, chat_template: str) -> Any:
    """The family's real processor class around ``tokenizer``."""
    import transformers

    def make(spec: tuple[str, Mapping[str, Any]]) -> Any:
        name, kwargs = spec
        return getattr(transformers, name)(**kwargs)

    processor_class: Callable[..., Any] = getattr(transformers, tiny.processor_class)
    return processor_class(
        image_processor=make(tiny.image_processor),
        tokenizer=tokenizer,
        video_processor=make(tiny.video_processor),
        chat_template=chat_template,
    )


def build_config(tiny: TinyFamily, tokenizer: Any, special_tokens: tuple[str, ...]) -> Any:
    """A toy-size config of the family whose special token ids come from ``tokenizer``."""
    import transformers

    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in special_tokens}
    text = {
        # Pad the embedding table to a multiple of 64, like the real model pads 151665 -> 152064.
        "vocab_size": -(-len(tokenizer) // 64) * 64,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "max_position_embeddings": 32768,
        # Untied head: with tied embeddings a random model just repeats its last input
        # token, so every prompt would get the same answer and hide batching bugs.
        "tie_word_embeddings": False,
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
        **tiny.text,
    }
    vision = {
        "depth": 2,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_heads": 2,
        "out_hidden_size": 64,
        # Must match the processor, which cuts the pixels into these patches.
        "patch_size": tiny.family.patch_size,
        "temporal_patch_size": tiny.family.temporal_patch_size,
        **tiny.vision,
    }
    return getattr(transformers, tiny.config_class)(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        bos_token_id=text["bos_token_id"],
        eos_token_id=text["eos_token_id"],
        pad_token_id=text["pad_token_id"],
        tie_word_embeddings=False,
        dtype="float32",
    )
