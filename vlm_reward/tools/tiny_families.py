"""The per-family half of the tiny checkpoints: a sized config and the real processor classes.

:mod:`vlm_reward.tools.tiny_checkpoint` builds the shared half (tokenizer, chat template,
generation config, seeded weights, the CLI); what differs between Qwen2.5-VL and Qwen3-VL
is here, one :class:`TinyFamily` per :class:`~vlm_reward.judging.model_family.ModelFamily`, so
adding a family is one entry, not a branch.

Sizes: widths and depths are a :class:`~vlm_reward.tools.checkpoint_size.CheckpointSize` (the
default, ``tiny``: head dims 32, two layers, width 64); what a family derives from one is here.
``mrope_section`` is the real model's split (for head dim 128) scaled to the size's head dim (it
must sum to head_dim / 2): Qwen2.5-VL's [16, 24, 24] -> [4, 6, 6] at 32, [8, 12, 12] at 64;
Qwen3-VL's [24, 20, 20] -> [6, 5, 5] at 32. Which vision blocks are special follows the real
models' spacing: Qwen2.5-VL attends globally in the last block of every 8 (the 7B's 7, 15, 23, 31;
with fewer blocks, the last one), Qwen3-VL feeds DeepStack from the blocks ending the first three
quarters of the tower (the 4B's 5, 11, 17 of 24; block 0 of 2). Qwen3-VL's text config takes its
head dim as a key of its own (the class default is 128); Qwen2.5-VL's derives it.
Processor settings are the real checkpoints' ``preprocessor_config.json`` /
``video_preprocessor_config.json`` values (pixel bounds, patch geometry, normalisation), so
the tiny processor resizes, patches and counts tokens as the real one does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vlm_reward.judging.model_family import QWEN2_5_VL, QWEN3_VL, ModelFamily
from vlm_reward.tools.checkpoint_size import CheckpointSize


@dataclass(frozen=True)
class TinyFamily:
    """How to build the tiny checkpoint of one family.

    ``config_class`` and ``processor_class`` are transformers class names;
    ``image_processor`` / ``video_processor`` are ``(class name, kwargs)``; ``text`` and
    ``vision`` the config keys beyond the ones every family shares (``text``'s ``rope_scaling``
    without its ``mrope_section``); ``mrope_section`` the real model's split at head dim 128;
    ``head_dim_key`` whether the text config takes ``head_dim``; ``vision_blocks`` the vision
    config's block lists for a depth; ``default_system_prompt`` is the system turn the real chat
    template adds when a conversation has none (Qwen3-VL's adds none).
    """

    family: ModelFamily
    config_class: str
    processor_class: str
    image_processor: tuple[str, Mapping[str, Any]]
    video_processor: tuple[str, Mapping[str, Any]]
    text: Mapping[str, Any]
    vision: Mapping[str, Any]
    mrope_section: tuple[int, int, int]
    head_dim_key: bool
    vision_blocks: Callable[[int], dict[str, list[int]]]
    default_system_prompt: str | None


def scaled_mrope(real: Sequence[int], head_dim: int) -> list[int]:
    """The real M-RoPE split ``real`` (it sums to the real head dim / 2) scaled to sum to
    ``head_dim`` / 2; ``ValueError`` when it does not scale to whole frequencies."""
    half, total = head_dim // 2, sum(real)
    if head_dim % 2 or any(part * half % total for part in real):
        raise ValueError(
            f"mrope_section {list(real)} does not scale to head dim {head_dim} in whole frequencies; "
            "use a head dim that is a multiple of 32."
        )
    return [part * half // total for part in real]


def global_attention_blocks(depth: int) -> dict[str, list[int]]:
    """Qwen2.5-VL: the last block of every 8 attends globally (the 7B: 7, 15, 23, 31 of 32)."""
    every = min(8, depth)
    return {"fullatt_block_indexes": [i for i in range(depth) if (i + 1) % every == 0]}


def deepstack_blocks(depth: int) -> dict[str, list[int]]:
    """Qwen3-VL: DeepStack taps the blocks that end the first three quarters (the 4B: 5, 11, 17)."""
    return {"deepstack_visual_indexes": sorted({max(0, depth * k // 4 - 1) for k in (1, 2, 3)})}


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
    text={"rope_theta": 1000000.0, "rope_scaling": {"type": "mrope"}},
    vision={
        "window_size": 112,
        # Seconds -> M-RoPE temporal positions; the 7B checkpoint uses 2 (the class default is 4).
        "tokens_per_second": 2,
        "spatial_merge_size": QWEN2_5_VL.merge_size,
    },
    mrope_section=(16, 24, 24),
    head_dim_key=False,
    vision_blocks=global_attention_blocks,
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
    text={"rope_theta": 5000000.0, "rope_scaling": {"rope_type": "default", "mrope_interleaved": True}},
    vision={
        # A square grid of learned position embeddings (the 4B's is 48 x 48; this one, at
        # every size, interpolated like it to the frame's grid).
        "num_position_embeddings": 64,
        "spatial_merge_size": QWEN3_VL.merge_size,
    },
    mrope_section=(24, 20, 20),
    head_dim_key=True,
    vision_blocks=deepstack_blocks,
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


def build_config(
    tiny: TinyFamily, tokenizer: Any, special_tokens: tuple[str, ...], size: CheckpointSize | None = None
) -> Any:
    """A config of the family at ``size`` (default: ``tiny``) whose special token ids come from
    ``tokenizer``."""
    import transformers

    size = size or CheckpointSize()
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in special_tokens}
    mrope_section = scaled_mrope(tiny.mrope_section, size.head_dim)
    text = {
        # Pad the embedding table to a multiple of 64, like the real model pads 151665 -> 152064.
        "vocab_size": -(-len(tokenizer) // 64) * 64,
        "hidden_size": size.hidden,
        "intermediate_size": size.intermediate,
        "num_hidden_layers": size.layers,
        "num_attention_heads": size.heads,
        "num_key_value_heads": size.kv_heads,
        "max_position_embeddings": 32768,
        # Untied head: with tied embeddings a random model just repeats its last input
        # token, so every prompt would get the same answer and hide batching bugs.
        "tie_word_embeddings": False,
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
        **tiny.text,
        "rope_scaling": {**tiny.text["rope_scaling"], "mrope_section": mrope_section},
        **({"head_dim": size.head_dim} if tiny.head_dim_key else {}),
    }
    vision = {
        "depth": size.vision_depth,
        "hidden_size": size.vision_hidden,
        "intermediate_size": size.vision_intermediate,
        "num_heads": size.vision_heads,
        # The merger projects into the language model's width.
        "out_hidden_size": size.hidden,
        # Must match the processor, which cuts the pixels into these patches.
        "patch_size": tiny.family.patch_size,
        "temporal_patch_size": tiny.family.temporal_patch_size,
        **tiny.vision,
        **tiny.vision_blocks(size.vision_depth),
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
