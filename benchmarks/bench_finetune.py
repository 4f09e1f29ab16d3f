"""Benchmark (issue 31): fine-tuning the tiny judges: samples per second, peak memory, video share.

What is measured: training samples per second, peak memory, and the share of a step spent
decoding and processing the video, which the input cache saves.

Per family (the tiny Qwen2.5-VL and Qwen3-VL of ``vlm_reward.tools.tiny_checkpoint``) and per
request size (what the env sends by default, 16 frames of at most 200,704 pixels; and the tests'
8 frames of at most 12,544), one child process each (so its peak RSS is its own) trains the judge
with the fine-tune's own modules (``reward_eval.finetune``: the server's input steps, full
fine-tuning, the readout loss, 8 examples per optimizer step) on 8 synthetic 16-frame 256x256 MP4s
and measures, side by side in alternating repetitions, one epoch with the processed inputs cached
(as ``finetune`` trains) and one that builds them again for every example (``--no-cache-inputs``).
The video share is the input-building time of the uncached epoch over that epoch's time.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_finetune.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO, Row, Stats, header, interleave, parse_args, print_table, synthetic_frames

FAMILIES = ("qwen2_5_vl", "qwen3_vl")
SIZES = {"env default (16 frames, 200704 px)": (16, 200704), "tests (8 frames, 12544 px)": (8, 12544)}
EXAMPLES = 8


def measure(family: str, nframes: int, max_pixels: int, repeats: int) -> dict[str, Any]:
    """In this process: samples/s cached and uncached per repetition, the video share, peak RSS."""
    import torch
    import transformers

    from reward_eval.finetune.inputs import InputCache, Request
    from reward_eval.finetune.lora import make_trainable
    from reward_eval.finetune.readout import target_index
    from reward_eval.finetune.trainer import Item, make_optimizer, train_step
    from vlm_reward.backends.hf_generation import limit_cpu_threads
    from vlm_reward.judging.model_family import FAMILIES as KNOWN
    from vlm_reward.judging.probability import AnswerTokens
    from vlm_reward.tools.tiny_checkpoint import build_tiny_checkpoint
    from vlm_reward.video_io import encode_mp4

    limit_cpu_threads(torch)
    tmp = Path(tempfile.mkdtemp(prefix="bench-finetune-"))
    path = build_tiny_checkpoint(tmp / "model", family)
    videos = []
    for i in range(EXAMPLES):
        videos.append(tmp / f"v{i}.mp4")
        encode_mp4(synthetic_frames(16, 256, seed=i), videos[-1], fps=4)
    processor = transformers.AutoProcessor.from_pretrained(path)
    model = getattr(transformers, KNOWN[family].model_class).from_pretrained(path, dtype=torch.float32)
    model = make_trainable(model, "full", 16, 32.0, "")
    request = Request(nframes, max_pixels, 4.0)
    spec = request.prompt()
    tokens = AnswerTokens.from_tokenizer(processor.tokenizer, spec.answer_scale)
    optimizer = make_optimizer(model, 1e-3)
    caches = {on: InputCache(processor, KNOWN[family], spec, enabled=on) for on in (True, False)}

    def items(cache: InputCache) -> list[Item]:
        def one(i: int) -> Item:
            job = request.job("put the soup in the basket", str(videos[i]), 16)
            return Item(
                str(i), lambda: cache.get(str(i), job), target_index(spec.answer_scale, i % 2 == 0), 1.0
            )

        return [one(i) for i in range(EXAMPLES)]

    def epoch(on: bool) -> float:
        cache = caches[on]
        before, started = cache.seconds, time.perf_counter()
        train_step(model, optimizer, items(cache), tokens, 1.0)
        elapsed = time.perf_counter() - started
        shares.setdefault(on, []).append((cache.seconds - before) / elapsed)
        return elapsed

    shares: dict[bool, list[float]] = {}
    samples = interleave({"cached": lambda: epoch(True), "uncached": lambda: epoch(False)}, repeats)
    inputs = caches[True].get("0", request.job("t", str(videos[0]), 16))
    return {
        "cached_sps": [EXAMPLES / s for s in samples["cached"]],
        "uncached_sps": [EXAMPLES / s for s in samples["uncached"]],
        "video_share": shares[False][-repeats:],
        "prompt_tokens": int(inputs["input_ids"].shape[1]),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--one", nargs=3, metavar=("FAMILY", "NFRAMES", "MAX_PIXELS"), help=argparse.SUPPRESS)


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=3, add=add_options)
    if args.one:
        family, nframes, max_pixels = args.one
        print(json.dumps(measure(family, int(nframes), int(max_pixels), args.repeats)))
        return
    header("Fine-tuning the tiny judges: samples/s, peak memory, video share of a step")
    for family in FAMILIES:
        rows = []
        for label, (nframes, max_pixels) in SIZES.items():
            command = [
                sys.executable,
                __file__,
                "--repeats",
                str(args.repeats),
                "--one",
                family,
                str(nframes),
                str(max_pixels),
            ]
            done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1800, check=True)
            found = json.loads(done.stdout.strip().splitlines()[-1])
            rows += [
                Row(f"{label}: samples/s cached", Stats.of(found["cached_sps"]), "samples/s"),
                Row(f"{label}: samples/s uncached", Stats.of(found["uncached_sps"]), "samples/s"),
                Row(f"{label}: video share uncached", Stats.of(found["video_share"]), "%", 100.0),
            ]
            print(
                f"{family}, {label}: {found['prompt_tokens']} prompt tokens, "
                f"peak RSS {found['peak_rss_mib']:.0f} MiB"
            )
        print_table(f"{family}: one optimizer step of {EXAMPLES} examples (full fine-tuning)", rows)


if __name__ == "__main__":
    main()
