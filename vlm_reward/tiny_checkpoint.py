"""A tiny random-weight Qwen2.5-VL checkpoint, built offline, for tests and smoke runs.

The real Qwen2.5-VL-7B cannot be downloaded or run here, but the code paths that matter
(chat template -> qwen-vl-utils -> processor -> vision tower -> ``generate``) only care
about the *architecture* and the *processor*, not the weights. So this module builds:

- a ``Qwen2_5_VLForConditionalGeneration`` with the real architecture (window attention,
  M-RoPE, patch merger) at toy width and depth, with seeded random weights, ~1.5 MB on disk;
- the real ``Qwen2_5_VLProcessor`` with the real ``Qwen2VLImageProcessorFast`` (what
  transformers 4.57 loads for Qwen2.5-VL by default) and ``Qwen2VLVideoProcessor``
  (patch 14, merge 2, temporal patch 2, as in the 7B model);
- a small byte-level BPE tokenizer (all 256 byte symbols plus a few merges) with Qwen's
  special tokens in Qwen's order, and a chat template that renders Qwen2.5-VL's format.

Answers are gibberish, but shapes, token ids, placeholder expansion and stopping behave
as with the real model. Nothing touches the network. ``config.json`` names the architecture
at its top level, as real Qwen2.5-VL checkpoints do, so vLLM loads it as a generative model.

CLI: ``python -m vlm_reward.tiny_checkpoint OUT_DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

# Qwen2's special tokens in the order Qwen2.5-VL's tokenizer defines them, so their
# relative ids match the real model (<|endoftext|> first, <|video_pad|> last).
SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)

# A few byte-level merges so the tokenizer really is BPE (multi-byte tokens exist and
# decoding has to join them), while the vocabulary stays tiny. "Ġ" is the byte-level
# symbol for a space.
_WORD_MERGES = (("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("e", "r"), ("a", "n"), ("Ġ", "a"))
# "yes" and "no" in each case, bare and after a space, are single tokens as in Qwen's real
# vocabulary: score_mode "probability" reads them at the first answer position.
_ANSWER_MERGES = (
    *(("y", "e"), ("ye", "s"), ("Y", "e"), ("Ye", "s"), ("Y", "E"), ("YE", "S")),
    *(("n", "o"), ("N", "o"), ("N", "O")),
    *(("Ġ", word) for word in ("yes", "Yes", "YES", "no", "No", "NO")),
)
MERGES = (*_WORD_MERGES, *_ANSWER_MERGES)

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."

# Qwen2.5-VL's chat format: every turn is "<|im_start|>ROLE\n...<|im_end|>\n"; a vision
# item becomes <|vision_start|><|image_pad|><|vision_end|> (or <|video_pad|>), which the
# processor later expands to one pad per vision token. A conversation without a system
# turn gets Qwen's default one, as the real template does.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if loop.first and message['role'] != 'system' -%}"
    "{{- '<|im_start|>system\\n" + DEFAULT_SYSTEM_PROMPT + "<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}"
    "{{- message['content'] -}}"
    "{%- else -%}"
    "{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' or 'image' in item or 'image_url' in item -%}"
    "{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- elif item['type'] == 'video' or 'video' in item -%}"
    "{{- '<|vision_start|><|video_pad|><|vision_end|>' -}}"
    "{%- elif 'text' in item -%}"
    "{{- item['text'] -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- endif -%}"
)

# The real 7B preprocessor's pixel bounds; qwen-vl-utils resizes before the processor,
# so these only matter for inputs that did not go through it.
PROCESSOR_KWARGS: dict[str, Any] = {
    "min_pixels": 56 * 56,
    "max_pixels": 28 * 28 * 16384,
    "patch_size": 14,
    "temporal_patch_size": 2,
    "merge_size": 2,
}

DEFAULT_MAX_NEW_TOKENS = 8
SEED = 0
ARCHITECTURES = ["Qwen2_5_VLForConditionalGeneration"]


def _byte_symbols() -> list[str]:
    """The 256 printable stand-ins byte-level BPE uses for bytes 0..255, in byte order.

    Printable Latin-1 bytes stand for themselves; the others are shifted to code points
    from 256 up, so every byte has a visible, unambiguous symbol (space becomes "Ġ").
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), 256)]
    symbols, shifted = {}, 0
    for byte in range(256):
        if byte in printable:
            symbols[byte] = chr(byte)
        else:
            symbols[byte] = chr(256 + shifted)
            shifted += 1
    return [symbols[b] for b in range(256)]


def build_tokenizer() -> Any:
    """A ``Qwen2TokenizerFast`` over a byte-level BPE with Qwen's special tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import Qwen2TokenizerFast

    vocab = {symbol: i for i, symbol in enumerate(_byte_symbols())}
    for left, right in MERGES:
        vocab[left + right] = len(vocab)
    bpe = Tokenizer(models.BPE(vocab=vocab, merges=list(MERGES), fuse_unk=False, byte_fallback=False))
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    bpe.post_processor = processors.ByteLevel(trim_offsets=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    # Qwen2.5-VL's tokenizer: no BOS is prepended, <|im_end|> ends a turn, and
    # <|endoftext|> pads; the other specials are "additional" so decode can skip them.
    return Qwen2TokenizerFast(
        tokenizer_object=bpe,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        additional_special_tokens=[t for t in SPECIAL_TOKENS if t not in ("<|endoftext|>", "<|im_end|>")],
        model_max_length=32768,
        errors="replace",
        chat_template=CHAT_TEMPLATE,
    )


def build_processor() -> Any:
    """The real ``Qwen2_5_VLProcessor`` around the tiny tokenizer."""
    from transformers import Qwen2_5_VLProcessor, Qwen2VLImageProcessorFast, Qwen2VLVideoProcessor

    return Qwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessorFast(**PROCESSOR_KWARGS),
        tokenizer=build_tokenizer(),
        video_processor=Qwen2VLVideoProcessor(**PROCESSOR_KWARGS),
        chat_template=CHAT_TEMPLATE,
    )


def build_config(tokenizer: Any) -> Any:
    """A toy-size ``Qwen2_5_VLConfig`` whose special token ids come from ``tokenizer``.

    Head dims are 32 (not smaller) so attention kernels that only support multiples of
    32 (e.g. vLLM's) accept the model; mrope_section is the 7B's [16, 24, 24] scaled to
    head_dim 32 (it must sum to head_dim / 2).
    """
    from transformers import Qwen2_5_VLConfig

    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    text = {
        # Pad the embedding table to a multiple of 64, like the real model pads 151665 -> 152064.
        "vocab_size": -(-len(tokenizer) // 64) * 64,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "max_position_embeddings": 32768,
        "rope_theta": 1000000.0,
        "rope_scaling": {"type": "mrope", "mrope_section": [4, 6, 6]},
        # Untied head: with tied embeddings a random model just repeats its last input
        # token, so every prompt would get the same answer and hide batching bugs.
        "tie_word_embeddings": False,
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
    }
    vision = {
        "depth": 2,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_heads": 2,
        "out_hidden_size": 64,
        "fullatt_block_indexes": [1],
        "window_size": 112,
        # Seconds -> M-RoPE temporal positions; the 7B checkpoint uses 2 (the class default is 4).
        "tokens_per_second": 2,
        # Must match the processor, which cuts the pixels into these patches.
        "patch_size": PROCESSOR_KWARGS["patch_size"],
        "temporal_patch_size": PROCESSOR_KWARGS["temporal_patch_size"],
        "spatial_merge_size": PROCESSOR_KWARGS["merge_size"],
    }
    return Qwen2_5_VLConfig(
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


def build_generation_config(tokenizer: Any) -> Any:
    """Greedy, a few tokens, and stop at <|im_end|> (or <|endoftext|>) like the real model."""
    from transformers import GenerationConfig

    end = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    return GenerationConfig(
        bos_token_id=end,
        pad_token_id=end,
        eos_token_id=[tokenizer.convert_tokens_to_ids("<|im_end|>"), end],
        do_sample=False,
        max_new_tokens=DEFAULT_MAX_NEW_TOKENS,
    )


def build_tiny_qwen2_5_vl(path: str | os.PathLike[str]) -> Path:
    """Write a tiny random Qwen2.5-VL checkpoint with a real processor to ``path``; return it.

    The directory loads with ``AutoProcessor`` / ``AutoModelForImageTextToText`` offline.
    Weights come from a fixed torch seed, so two builds hold the same weights. Takes a
    second or two and well under 5 MB on disk.
    """
    import torch
    from transformers import Qwen2_5_VLForConditionalGeneration

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    processor = build_processor()
    config = build_config(processor.tokenizer)
    # fork_rng: seed for reproducible weights without changing the caller's RNG state.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model = Qwen2_5_VLForConditionalGeneration(config).eval()
    model.generation_config = build_generation_config(processor.tokenizer)
    model.save_pretrained(out, safe_serialization=True)
    processor.save_pretrained(out)
    write_architectures(out / "config.json")
    return out


def write_architectures(config_path: Path) -> None:
    """Put the top-level ``architectures`` into a saved ``config.json``.

    transformers 4.57's composite Qwen2.5-VL config forwards the attribute to its
    ``text_config``, so ``save_pretrained`` writes it only there. vLLM picks the model class
    from the top-level list; without it, it resolves ``Qwen2_5_VLModel`` as a pooling model
    and refuses to generate. Real checkpoints carry it, hence the edit after saving.
    """
    config = json.loads(config_path.read_text())
    config["architectures"] = list(ARCHITECTURES)
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> None:
    """CLI entry point: build the checkpoint in OUT_DIR and print its path."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", help="directory to write the checkpoint into (created if missing)")
    args = parser.parse_args(argv)
    print(build_tiny_qwen2_5_vl(args.out_dir))


if __name__ == "__main__":
    main()
