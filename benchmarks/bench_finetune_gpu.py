"""Benchmark (issue 31's GPU recipe): one LoRA step of a full-size judge on one GPU: peak memory, time.

``docs/evaluate/finetune.md`` plans one 40 GB GPU per fine-tune of Qwen2.5-VL-7B or Qwen3-VL-8B
(bf16, LoRA rank 16 on the family's default modules, no gradient checkpointing). This measures
it, with the fine-tune's own modules (``reward_eval.finetune``: the server's input steps, the
family's LoRA targets, AdamW, the readout loss, one example per forward pass) on the real
architectures at their released sizes with **random weights** (no model hub is reachable from
the GPU machine; memory and time do not depend on the weights' values). Two steps, because the
GPU machine has neither PyAV nor qwen-vl-utils:

1. ``prepare OUT`` (here): per family and per request size, the processed inputs
   of one synthetic 16-frame episode, built by :class:`reward_eval.finetune.inputs.InputCache`
   with the tiny checkpoint's processor (whose image and video processors are the real ones:
   the same token counts); the pixel values are kept as their shape only, and filled with noise
   on the GPU (the weights are random too), so the file stays a few KB. Prepare with the venv
   whose transformers has the GPU machine's major version: transformers 5's processor adds
   ``mm_token_type_ids``, which its Qwen3-VL needs (``.venv-vllm`` has 5.x, ``.venv`` 4.57).
2. ``measure IN`` (on the GPU): per family, the model built from the tiny checkpoint's config with
   the released widths and depths (below), in bfloat16 on the GPU, LoRA through ``peft``; then per
   request size, 2 warm-up and ``--repeats`` timed optimizer steps of one example
   (``train_step``), the peak allocated memory over them, and the scoring pass (``read_scores``).

    PYTHONPATH=. .venv-vllm/bin/python benchmarks/bench_finetune_gpu.py prepare /tmp/ft-inputs.pt
    PYTHONPATH=. python3 benchmarks/bench_finetune_gpu.py measure /tmp/ft-inputs.pt [--repeats 5]
    PYTHONPATH=. .venv/bin/python benchmarks/bench_finetune_gpu.py measure IN --device cpu --tiny
"""

from __future__ import annotations

import argparse
import copy
import json
import tempfile
import time
from pathlib import Path
from typing import Any

# The released checkpoints' config.json values that set the size (Qwen2.5-VL-7B-Instruct,
# Qwen3-VL-8B-Instruct); the rest (token ids, rope sections' layout) comes from the tiny config.
FULL_SIZE: dict[str, dict[str, Any]] = {
    "qwen2_5_vl": {
        "name": "Qwen2.5-VL-7B",
        "text_config": {
            "hidden_size": 3584,
            "intermediate_size": 18944,
            "num_hidden_layers": 28,
            "num_attention_heads": 28,
            "num_key_value_heads": 4,
            "vocab_size": 152064,
            "rms_norm_eps": 1e-6,
            "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
        },
        "vision_config": {
            "depth": 32,
            "hidden_size": 1280,
            "intermediate_size": 3420,
            "num_heads": 16,
            "out_hidden_size": 3584,
            "fullatt_block_indexes": [7, 15, 23, 31],
        },
    },
    "qwen3_vl": {
        "name": "Qwen3-VL-8B",
        "text_config": {
            "hidden_size": 4096,
            "intermediate_size": 12288,
            "num_hidden_layers": 36,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 151936,
            "rope_scaling": {
                "rope_type": "default",
                "mrope_section": [24, 20, 20],
                "mrope_interleaved": True,
            },
        },
        "vision_config": {
            "depth": 27,
            "hidden_size": 1152,
            "intermediate_size": 4304,
            "num_heads": 16,
            "out_hidden_size": 4096,
            "num_position_embeddings": 2304,
            "deepstack_visual_indexes": [8, 16, 24],
        },
    },
}
# (frames, side of a square frame): what the env sends by default (16 frames of its 256x256
# renders, at most 200,704 pixels a frame), half the frames, and frames at that bound (448x448):
# the largest a request of the default max_pixels can be.
SIZES = {
    "env default (16 frames of 256x256)": (16, 256),
    "half the frames (8 frames of 256x256)": (8, 256),
    "at max_pixels (16 frames of 448x448)": (16, 448),
}
NFRAMES, MAX_PIXELS, FPS = 16, 200704, 4.0
LORA = {"rank": 16, "alpha": 32.0, "lr": 1e-4}
TASK = "put both the alphabet soup and the tomato sauce in the basket"


def prepare(out: Path) -> None:
    """Build every (family, size)'s inputs here and save them with the tiny configs to ``out``."""
    import torch
    import transformers

    from benchmarks.harness import synthetic_frames
    from reward_eval.finetune.inputs import InputCache, Request
    from vlm_reward.judging.model_family import FAMILIES
    from vlm_reward.judging.probability import AnswerTokens
    from vlm_reward.tools.tiny_checkpoint import build_tiny_checkpoint
    from vlm_reward.video_io import encode_mp4

    request = Request(NFRAMES, MAX_PIXELS, FPS)
    spec = request.prompt()
    saved: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-finetune-gpu-") as tmp:
        for family in FULL_SIZE:
            path = build_tiny_checkpoint(Path(tmp) / family, family)
            processor = transformers.AutoProcessor.from_pretrained(path)
            cache = InputCache(processor, FAMILIES[family], spec)
            examples = {}
            for label, (frames, side) in SIZES.items():
                video = Path(tmp) / f"{family}-{frames}x{side}.mp4"
                encode_mp4(synthetic_frames(frames, side, seed=side), video, fps=FPS)
                inputs = cache.get(label, request.job(TASK, str(video), frames))
                examples[label] = {
                    key: (tuple(value.shape) if key.startswith("pixel_values") else value)
                    for key, value in inputs.items()
                }
            saved[family] = {
                "config": json.loads((path / "config.json").read_text(encoding="utf-8")),
                "tokens": AnswerTokens.from_tokenizer(processor.tokenizer, spec.answer_scale),
                "answer_scale": spec.answer_scale,
                "examples": examples,
            }
    torch.save(saved, out)
    for family, entry in saved.items():
        for label, example in entry["examples"].items():
            print(f"{family}, {label}: {example['input_ids'].shape[1]} prompt tokens")


def full_size_config(tiny: dict[str, Any], family: str) -> dict[str, Any]:
    """The tiny checkpoint's config with the released sizes of ``family`` put in."""
    config = copy.deepcopy(tiny)
    for part in ("text_config", "vision_config"):
        config[part].update(FULL_SIZE[family][part])
    config["text_config"].pop("layer_types", None)  # recomputed for the new depth
    config["dtype"] = "bfloat16"
    return config


def build_model(config: dict[str, Any], family: str, device: str) -> Any:
    """The family's model from ``config``, random weights, created in bfloat16 on ``device``."""
    import torch
    import transformers

    from vlm_reward.judging.model_family import FAMILIES

    with tempfile.TemporaryDirectory(prefix="bench-config-") as tmp:
        (Path(tmp) / "config.json").write_text(json.dumps(config), encoding="utf-8")
        loaded = transformers.AutoConfig.from_pretrained(tmp)
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(device):
            model = getattr(transformers, FAMILIES[family].model_class)(loaded)
    finally:
        torch.set_default_dtype(previous)
    return model.to(torch.bfloat16)


def device_inputs(example: dict[str, Any], device: str) -> dict[str, Any]:
    """``example`` on ``device``, its pixel values noise of the saved shape."""
    import torch

    generator = torch.Generator(device=device).manual_seed(0)
    return {
        key: (
            torch.randn(value, generator=generator, device=device)
            if key.startswith("pixel_values")
            else value.to(device)
        )
        for key, value in example.items()
    }


def allocated_gib(device: str) -> float:
    """What torch has allocated on ``device`` (0 on the CPU, where it does not count)."""
    import torch

    return torch.cuda.memory_allocated() / 2**30 if device.startswith("cuda") else 0.0


def timed_steps(step: Any, repeats: int, device: str) -> tuple[list[float], float]:
    """Seconds of each of ``repeats`` calls of ``step`` after 2 warm-ups; the peak GiB over them."""
    import torch

    on_gpu = device.startswith("cuda")
    for _ in range(2):
        step()
    if on_gpu:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        step()
        if on_gpu:
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - started)
    return seconds, (torch.cuda.max_memory_allocated() / 2**30 if on_gpu else 0.0)


def measure_family(family: str, entry: dict[str, Any], args: argparse.Namespace) -> None:
    """Build ``family`` at full size, make it trainable, and time a step and a scoring pass per size."""
    from benchmarks.harness import print_table
    from reward_eval.finetune.lora import make_trainable
    from reward_eval.finetune.readout import target_index
    from reward_eval.finetune.trainer import Item, make_optimizer
    from vlm_reward.judging.model_family import FAMILIES

    config = entry["config"] if args.tiny else full_size_config(entry["config"], family)
    model = build_model(config, family, args.device)
    weights = allocated_gib(args.device)
    total = sum(p.numel() for p in model.parameters())
    model = make_trainable(model, "lora", LORA["rank"], LORA["alpha"], FAMILIES[family].lora_targets)
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    optimizer = make_optimizer(model, LORA["lr"])
    name = f"tiny {family}" if args.tiny else FULL_SIZE[family]["name"]
    print(
        f"\n{name} ({total / 1e9:.2f} B parameters, random weights): weights {weights:.1f} GiB in bf16; "
        f"LoRA rank {LORA['rank']} trains {trained / 1e6:.1f} M"
    )
    target = target_index(entry["answer_scale"], True)
    rows = []
    for label, example in entry["examples"].items():
        print(f"  {label}: {example['input_ids'].shape[1]} prompt tokens")
        inputs = device_inputs(example, args.device)
        item = Item(label, lambda inputs=inputs: inputs, target, 1.0)
        rows += measure_example(model, optimizer, item, entry["tokens"], args)
    print_table(f"{name}: one example, LoRA training step and scoring pass", rows)


def measure_example(
    model: Any, optimizer: Any, item: Any, tokens: Any, args: argparse.Namespace
) -> list[Any]:
    """One example's training step and scoring pass, timed, and their peaks: rows of the table."""
    from benchmarks.harness import Row, Stats
    from reward_eval.finetune.trainer import read_scores, train_step

    step_s, step_peak = timed_steps(
        lambda: train_step(model, optimizer, [item], tokens, 1.0), args.repeats, args.device
    )
    score_s, score_peak = timed_steps(lambda: read_scores(model, [item], tokens), args.repeats, args.device)
    return [
        Row(f"{item.key}: training step", Stats.of(step_s), "s"),
        Row(f"{item.key}: training step's peak", Stats.of([step_peak]), "GiB"),
        Row(f"{item.key}: scoring pass", Stats.of(score_s), "s"),
        Row(f"{item.key}: scoring pass's peak", Stats.of([score_peak]), "GiB"),
    ]


def measure(args: argparse.Namespace) -> None:
    """Every family of the inputs in ``args.path``, one after another on ``args.device``."""
    import peft
    import torch
    import transformers

    from benchmarks.harness import header

    saved = torch.load(args.path, weights_only=False)
    header("One LoRA step of a full-size judge" + (" (tiny sizes)" if args.tiny else ""))
    where = torch.cuda.get_device_name() if args.device.startswith("cuda") else "CPU"
    print(
        f"# on {where}, torch {torch.__version__}, transformers {transformers.__version__}, "
        f"peft {peft.__version__}"
    )
    for family, entry in saved.items():
        measure_family(family, entry, args)  # returns with the model freed
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    sub.add_parser("prepare", help="build the inputs here (a set-up venv; see above)").add_argument(
        "path", type=Path
    )
    run = sub.add_parser("measure", help="train and score on the GPU")
    run.add_argument("path", type=Path)
    run.add_argument("--repeats", type=int, default=5, help="timed steps per size (default %(default)s)")
    run.add_argument("--device", default="cuda", help="where to train (default %(default)s)")
    run.add_argument("--tiny", action="store_true", help="keep the tiny sizes (checks this script on a CPU)")
    args = parser.parse_args()
    if args.step == "prepare":
        prepare(args.path)
    else:
        measure(args)


if __name__ == "__main__":
    main()
