"""Random-weight Qwen2.5-VL and Qwen3-VL checkpoints, built offline at a chosen size, for tests and CPU runs.

The real models cannot be downloaded or run here, but the code paths that matter
(chat template -> qwen-vl-utils -> processor -> vision tower -> ``generate``) only care
about the *architecture* and the *processor*, not the weights. So this module builds, per
family (:mod:`vlm_reward.tools.tiny_families` holds what differs):

- the family's ``...ForConditionalGeneration`` with the real architecture (Qwen2.5-VL:
  window attention, M-RoPE, patch merger; Qwen3-VL: interleaved M-RoPE, DeepStack, learned
  position embeddings) at a width and depth of :mod:`vlm_reward.tools.checkpoint_size` (by
  default ``tiny``: toy width and depth, ~1.5 MB on disk; ``small``, ``base`` and ``large`` up to
  tens of millions of parameters), with seeded random weights;
- the family's real processor with the image and video processor classes transformers
  picks for it (Qwen2.5-VL: 14 px patches; Qwen3-VL: 16 px patches and its own video
  processor, which writes frame timestamps), merge 2, temporal patch 2, as in the real models;
- a small byte-level BPE tokenizer (all 256 byte symbols plus a few merges) with Qwen's
  special tokens in Qwen's order, and a chat template that renders Qwen's format.

Answers are gibberish, but shapes, token ids, placeholder expansion and stopping behave
as with the real model. Nothing touches the network. ``config.json`` names the architecture
at its top level, as real checkpoints do, so vLLM loads it as a generative model.
:data:`SIZE_FILE` records the family, the size, the parameter count and a stamp (equal stamps,
equal checkpoints: same family, same size, same seed), so two sizes never pass for one another;
the model's own files at the default size are the ones built before sizes existed, byte for byte.

CLI: ``python -m vlm_reward.tools.tiny_checkpoint OUT_DIR [--family qwen3_vl] [--size base]
[--hidden 256 --layers 4 ...]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from vlm_reward.judging.model_family import QWEN2_5_VL
from vlm_reward.tools.checkpoint_size import (
    DEFAULT_SIZE,
    FIELD_HELP,
    FIELDS,
    PRESETS,
    CheckpointSize,
    checkpoint_size,
    preset_name,
)
from vlm_reward.tools.tiny_families import TINY_FAMILIES, build_config, build_processor, tiny_family

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

# Qwen's chat format: every turn is "<|im_start|>ROLE\n...<|im_end|>\n"; a vision item
# becomes <|vision_start|><|image_pad|><|vision_end|> (or <|video_pad|>), which the
# processor later expands to one pad per vision token (Qwen3-VL's also writes a
# "<t seconds>" text before each pair of frames). A conversation without a system turn
# gets the family's default one, as the real templates do (Qwen2.5-VL has one, Qwen3-VL none).
_TURNS = (
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
)


def chat_template(default_system_prompt: str | None) -> str:
    """The Jinja chat template, with ``default_system_prompt`` for conversations lacking one."""
    default = ""
    if default_system_prompt is not None:
        default = (
            "{%- if loop.first and message['role'] != 'system' -%}"
            "{{- '<|im_start|>system\\n" + default_system_prompt + "<|im_end|>\\n' -}}"
            "{%- endif -%}"
        )
    return (
        "{%- for message in messages -%}" + default + _TURNS + "{%- endfor -%}"
        "{%- if add_generation_prompt -%}"
        "{{- '<|im_start|>assistant\\n' -}}"
        "{%- endif -%}"
    )


DEFAULT_MAX_NEW_TOKENS = 8
SEED = 0
# The builder's record in the checkpoint: family, size (preset name and fields), parameters, stamp.
SIZE_FILE = "checkpoint_size.json"


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


def build_tokenizer(template: str) -> Any:
    """A ``Qwen2TokenizerFast`` over a byte-level BPE with Qwen's special tokens and ``template``."""
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
        chat_template=template,
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


def size_stamp(family: str, size: CheckpointSize) -> str:
    """What tells checkpoints apart: a hash of the family, the size's fields and the weights' seed
    (16 hex digits). The preset's name is not in it: an override that equals a preset is that preset."""
    identity = {"family": family, "size": size.to_dict(), "seed": SEED}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def read_size_record(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The builder's record (:data:`SIZE_FILE`) of the checkpoint at ``path``; ``None`` without one
    (a real checkpoint, or one built before sizes existed)."""
    record = Path(path) / SIZE_FILE
    return json.loads(record.read_text(encoding="utf-8")) if record.is_file() else None


def build_tiny_checkpoint(
    path: str | os.PathLike[str],
    family: str = QWEN2_5_VL.model_type,
    size: CheckpointSize | str = DEFAULT_SIZE,
) -> Path:
    """Write a random checkpoint of ``family`` (a model_type) at ``size`` (a
    :class:`~vlm_reward.tools.checkpoint_size.CheckpointSize` or a preset's name; default ``tiny``)
    with a real processor to ``path``, and its record (:data:`SIZE_FILE`).

    The directory loads with ``AutoProcessor`` / ``AutoModelForImageTextToText`` offline.
    Weights come from a fixed torch seed, so two builds hold the same weights. ``tiny`` takes a
    second or two and well under 5 MB on disk. ``ValueError`` for a family with no tiny build or
    an unknown preset.
    """
    import torch
    import transformers

    tiny = tiny_family(family)
    size = checkpoint_size(size) if isinstance(size, str) else size
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    template = chat_template(tiny.default_system_prompt)
    processor = build_processor(tiny, build_tokenizer(template), template)
    config = build_config(tiny, processor.tokenizer, SPECIAL_TOKENS, size)
    model_class = getattr(transformers, tiny.family.model_class)
    # fork_rng: seed for reproducible weights without changing the caller's RNG state.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model = model_class(config).eval()
    model.generation_config = build_generation_config(processor.tokenizer)
    model.save_pretrained(out, safe_serialization=True)
    processor.save_pretrained(out)
    write_architectures(out / "config.json", tiny.family.architecture)
    record = {
        "family": family,
        "size": preset_name(size),
        "dimensions": size.to_dict(),
        "parameters": sum(p.numel() for p in model.parameters()),
        "stamp": size_stamp(family, size),
    }
    (out / SIZE_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return out


def build_tiny_qwen2_5_vl(path: str | os.PathLike[str]) -> Path:
    """The tiny Qwen2.5-VL checkpoint (:func:`build_tiny_checkpoint`), what most tests use."""
    return build_tiny_checkpoint(path, QWEN2_5_VL.model_type)


def write_architectures(config_path: Path, architecture: str) -> None:
    """Put the top-level ``architectures`` into a saved ``config.json``.

    transformers 4.57's composite Qwen-VL configs forward the attribute to their
    ``text_config``, so ``save_pretrained`` writes it only there. vLLM picks the model class
    from the top-level list; without it, it resolves ``Qwen2_5_VLModel`` as a pooling model
    and refuses to generate. Real checkpoints carry it, hence the edit after saving.
    """
    config = json.loads(config_path.read_text())
    config["architectures"] = [architecture]
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def build_parser() -> argparse.ArgumentParser:
    """The command line: ``python -m vlm_reward.tools.tiny_checkpoint OUT_DIR [--family FAMILY]
    [--size NAME] [--FIELD N ...]``."""
    parser = argparse.ArgumentParser(
        prog="python -m vlm_reward.tools.tiny_checkpoint", description=__doc__.splitlines()[0]
    )
    parser.add_argument("out_dir", help="directory to write the checkpoint into (created if missing)")
    parser.add_argument(
        "--family",
        choices=sorted(TINY_FAMILIES),
        default=QWEN2_5_VL.model_type,
        help="architecture family of the checkpoint (default: %(default)s)",
    )
    parser.add_argument(
        "--size",
        choices=list(PRESETS),
        default=DEFAULT_SIZE,
        help="the named width and depth to start from; the flags below change single values of it "
        "(default: %(default)s)",
    )
    group = parser.add_argument_group("size overrides (each replaces one value of --size)")
    for name in FIELDS:
        group.add_argument(
            f"--{name.replace('_', '-')}", dest=name, type=int, metavar="N", help=FIELD_HELP[name]
        )
    return parser


def main(argv: list[str] | None = None) -> None:
    """CLI entry point: build the checkpoint in OUT_DIR and print its path."""
    parser = build_parser()
    args = parser.parse_args(argv)
    overrides = {name: getattr(args, name) for name in FIELDS if getattr(args, name) is not None}
    try:
        size = checkpoint_size(args.size, overrides)
    except ValueError as exc:
        parser.error(str(exc))
    print(build_tiny_checkpoint(args.out_dir, args.family, size))


if __name__ == "__main__":
    main()
