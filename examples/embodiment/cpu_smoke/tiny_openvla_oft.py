"""A tiny random-weight OpenVLA-OFT checkpoint, built offline in seconds, for CPU runs and tests.

RLinf's OpenVLA-OFT path reads the architecture from ``config.json``, so a checkpoint of the real
architecture at toy size exercises every line the 7B model does (processor, prompt, vision
backbones, projector, Llama, action-token decoding, un-normalisation) on a CPU:

* the vision backbones: timm's ``vit_tiny_patch16_224`` twice, fused as in OFT's DINOv2+SigLIP
  (``timm_model_ids`` / ``image_sizes`` / ``timm_override_act_layers`` override prismatic's table
  of backbone names; timm builds them with ``pretrained=False``);
* the language model: a 2-layer Llama of width 64 with Llama-2's vocabulary size padded to
  32,064 (OFT pads to a multiple of 64);
* the tokenizer: a small BPE (``tokenizers``, no sentencepiece) whose ids are the ones RLinf
  asserts for Llama-2: ``<s>`` 1, ``</s>`` 2, the lone ``▁`` piece 29871 (every prompt ends with
  it), ``<PAD>`` 32000; ids 31744-31999 are the 256 action bins, as in OpenVLA;
* ``norm_stats["libero_10_no_noops"]`` with ``q01``/``q99`` and the processor's config.

15.9 M parameters, 34 MB, seeded: the same ``seed`` gives the same weights. Its actions are
random; what it proves is that the code runs.
``python -m examples.embodiment.cpu_smoke.tiny_openvla_oft OUT``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

UNNORM_KEY = "libero_10_no_noops"
VOCAB_SIZE = 32000  # Llama-2's
PADDED_VOCAB = 32064  # OFT pads the embedding to a multiple of 64
PAD_ID = 32000
SPACE_ID = 29871  # the lone "▁" piece that ends every OpenVLA prompt
ACTION_BINS = 256  # ids VOCAB_SIZE - ACTION_BINS .. VOCAB_SIZE - 1
SPECIALS = ("<unk>", "<s>", "</s>")  # ids 0, 1, 2
IMAGE_SIZE = 224
TIMM_BACKBONE = "vit_tiny_patch16_224"
# The BPE is trained on the prompt template and LIBERO's words, so prompts stay short.
CORPUS = (
    "In: What action should the robot take to {}?\nOut: ",
    "put both the alphabet soup and the tomato sauce in the basket",
    "put both the cream cheese box and the butter in the basket",
    "turn on the stove and put the moka pot on it",
    "put the black bowl in the bottom drawer of the cabinet and close it",
    "put the white mug on the left plate and put the yellow and white mug on the right plate",
    "pick up the book and place it in the back compartment of the caddy",
    "put the white mug on the plate and put the chocolate pudding to the right of the plate",
    "put both moka pots on the stove",
    "pick up the ketchup milk orange juice salad dressing bbq sauce and place it in the tray",
    "open the top middle drawer of the cabinet and push the plate to the front of the stove",
)


def norm_stats() -> dict[str, Any]:
    """LIBERO-like action statistics (7-D: xyz, rotation, gripper) under the key RLinf reads."""
    high = [0.9375, 0.9375, 0.9375, 0.3, 0.3, 0.375, 1.0]
    low = [-h for h in high[:6]] + [-1.0]
    stats = {"q01": low, "q99": high, "min": low, "max": high, "mean": [0.0] * 7, "std": [0.3] * 7}
    action = {**stats, "mask": [True] * 6 + [False]}
    proprio = {k: [0.0] * 8 if k != "std" else [1.0] * 8 for k in ("q01", "q99", "min", "max", "mean", "std")}
    return {UNNORM_KEY: {"action": action, "proprio": proprio, "num_transitions": 1, "num_trajectories": 1}}


def model_config() -> dict[str, Any]:
    """``config.json``: OpenVLA's keys with tiny backbones (see the module docstring)."""
    return {
        "architectures": ["OpenVLAForActionPrediction"],
        "model_type": "openvla",
        "vision_backbone_id": "dinosiglip-vit-so-224px",  # fused, as OFT; the ids below override it
        "timm_model_ids": [TIMM_BACKBONE, TIMM_BACKBONE],
        "image_sizes": [IMAGE_SIZE, IMAGE_SIZE],
        "timm_override_act_layers": [None, None],
        "use_fused_vision_backbone": True,
        "llm_backbone_id": "llama2-7b-pure",
        "arch_specifier": "no-align+fused-gelu-mlp",
        "image_resize_strategy": "resize-naive",
        "llm_max_length": 2048,
        "pad_token_id": PAD_ID,
        "pad_to_multiple_of": PADDED_VOCAB - VOCAB_SIZE,
        "n_action_bins": ACTION_BINS,
        "norm_stats": norm_stats(),
        "text_config": {
            "model_type": "llama",
            "vocab_size": PADDED_VOCAB,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "max_position_embeddings": 1024,
            "pad_token_id": PAD_ID,
            "bos_token_id": 1,
            "eos_token_id": 2,
        },
        "torch_dtype": "float32",
    }


def image_processor_config() -> dict[str, Any]:
    """``preprocessor_config.json``: one transform per fused backbone (OFT's means and stds)."""
    return {
        "image_processor_type": "PrismaticImageProcessor",
        "processor_class": "PrismaticProcessor",
        "use_fused_vision_backbone": True,
        "image_resize_strategy": "resize-naive",
        "input_sizes": [[3, IMAGE_SIZE, IMAGE_SIZE]] * 2,
        "interpolations": ["bicubic", "bicubic"],
        "means": [[0.485, 0.456, 0.406], [0.5, 0.5, 0.5]],
        "stds": [[0.229, 0.224, 0.225], [0.5, 0.5, 0.5]],
    }


def build_tokenizer() -> Any:
    """A ``LlamaTokenizerFast`` with Llama-2's fixed ids (see the module docstring)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaTokenizerFast

    metaspace = {"replacement": "▁", "prepend_scheme": "first"}
    trained = Tokenizer(models.BPE(unk_token="<unk>"))
    trained.pre_tokenizer = pre_tokenizers.Metaspace(**metaspace)
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=list(SPECIALS), show_progress=False)
    trained.train_from_iterator(CORPUS, trainer=trainer)
    model = json.loads(trained.to_str())["model"]
    pieces = [p for p, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1]) if p not in SPECIALS]
    pieces.remove("▁")
    vocab = {piece: i for i, piece in enumerate(SPECIALS)}
    free = (i for i in range(len(SPECIALS), VOCAB_SIZE) if i != SPACE_ID)
    vocab.update(zip(pieces, free, strict=False))  # more free ids than pieces
    vocab["▁"] = SPACE_ID
    taken = set(vocab.values())
    vocab.update({f"<unused{i}>": i for i in range(VOCAB_SIZE) if i not in taken})
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    tokenizer = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(**metaspace)
    tokenizer.decoder = decoders.Metaspace(**metaspace)
    return LlamaTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<PAD>",
        add_bos_token=True,
        add_eos_token=False,
        padding_side="left",
        model_max_length=2048,
    )


def build(out_dir: str | Path, seed: int = 0) -> Path:
    """Write the checkpoint to ``out_dir`` (created) and return it; random weights from ``seed``."""
    import rlinf  # noqa: F401  (first: it installs the import hook that provides `prismatic`)

    # isort: split
    import torch
    from prismatic.extern.hf.configuration_prismatic import OpenVLAConfig
    from prismatic.extern.hf.modeling_prismatic import OpenVLAForActionPrediction

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    config = OpenVLAConfig(
        **{k: v for k, v in model_config().items() if k not in ("architectures", "model_type")}
    )
    config.architectures = ["OpenVLAForActionPrediction"]
    model = OpenVLAForActionPrediction(config).to(torch.float32)
    model.save_pretrained(out, safe_serialization=True)
    build_tokenizer().save_pretrained(out)
    (out / "preprocessor_config.json").write_text(json.dumps(image_processor_config(), indent=2))
    (out / "processor_config.json").write_text(json.dumps({"processor_class": "PrismaticProcessor"}))
    (out / "dataset_statistics.json").write_text(json.dumps(norm_stats(), indent=2))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", help="where to write the checkpoint (created)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    out = build(args.out_dir, args.seed)
    print(f"tiny OpenVLA-OFT written to {out} in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
