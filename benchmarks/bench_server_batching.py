"""Benchmark 4: dynamic batching on a real model: ``qwen_vl_hf`` on the tiny checkpoint.

Two servers on the same tiny random-weight Qwen2.5-VL (built offline by
``vlm_reward.tools.tiny_checkpoint``), on the CPU: one with ``--max-batch-size 32`` (dynamic
batching, default 20 ms window), one with ``--max-batch-size 1``. Per repetition, side
by side: 32 concurrent ``/score`` requests (a 16-frame 256x256 MP4 by path) to each, for
two request profiles:

- ``video-heavy``: the env's defaults, ``max_pixels`` 200704 (frames at full 256x256, about
  1500 prompt tokens) and 16 new tokens: the work is video preprocessing and prefill;
- ``decode-heavy``: ``max_pixels`` 12544 (112x112 frames, about 150 prompt tokens) and 64
  new tokens, like a judge that reasons before answering: the work is token-by-token decoding.

The model's answers are random, so most responses are 502 ``parse_error``; both 200 and
502 count as served (the whole path ran), anything else is an error. Throughput =
requests / wall time of the 32.

Target: batched / unbatched throughput >= 2x (median of per-repetition ratios).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_server_batching.py [--repeats 4]
"""

from __future__ import annotations

import argparse
import re
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from benchmarks.harness import (
    RewardServer,
    Row,
    Stats,
    header,
    interleave,
    parse_args,
    print_table,
    ratios,
    synthetic_frames,
    timed,
    verdict,
)
from vlm_reward.tools.tiny_checkpoint import build_tiny_qwen2_5_vl
from vlm_reward.video_io import encode_mp4

TARGET = 2.0
CONCURRENT = 32
SERVED = (200, 502)  # 502: the random model's answer held no score, but it was generated
_BATCH_LINE = re.compile(r"batch of (\d+) in")


# name -> (max_pixels, max_new_tokens)
PROFILES = {"video-heavy": (200704, 16), "decode-heavy": (12544, 64)}


class BatchSizeContender:
    """One server and a way to fire ``CONCURRENT`` requests at it at once."""

    def __init__(self, ckpt: Path, root: Path, batch: int) -> None:
        args = ["--backend", "qwen_vl_hf", "--model", str(ckpt), "--video-root", str(root)]
        # debug: the batcher logs each generate call's batch size, counted below.
        args += ["--max-batch-size", str(batch), "--log-level", "debug"]
        self.server = RewardServer(args, root / f"server_{batch}.log", plugins=())
        self.statuses: list[int] = []

    def burst(self, profile: str) -> float:
        """Wall time of ``CONCURRENT`` requests of ``profile`` released together."""
        max_pixels, max_new_tokens = PROFILES[profile]
        body = {
            "task_text": "put the red block on the plate",
            "video_path": "episode.mp4",
            "max_pixels": max_pixels,
            "backend_kwargs": {"max_new_tokens": max_new_tokens},
        }
        barrier = threading.Barrier(CONCURRENT)

        def post(_: int) -> int:
            barrier.wait()
            return requests.post(self.server.endpoint, json=body, timeout=600).status_code

        with ThreadPoolExecutor(CONCURRENT) as pool:
            seconds = timed(lambda: self.statuses.extend(pool.map(post, range(CONCURRENT))))
        return seconds

    def batch_sizes(self) -> list[int]:
        return [int(n) for n in _BATCH_LINE.findall(self.server.log_path.read_text(errors="replace"))]


def run(args: argparse.Namespace, tmp: Path) -> None:
    ckpt = build_tiny_qwen2_5_vl(tmp / "tiny-qwen2.5-vl")
    encode_mp4(synthetic_frames(16), tmp / "episode.mp4", fps=4)
    contenders = {b: BatchSizeContender(ckpt, tmp, b) for b in (CONCURRENT, 1)}
    try:
        for c in contenders.values():
            c.server.wait_ready()
        measures = {
            f"{profile}/{b}": (lambda c=c, p=profile: c.burst(p))
            for profile in PROFILES
            for b, c in contenders.items()
        }
        samples = interleave(measures, args.repeats)
    finally:
        for c in contenders.values():
            c.server.stop()
    errors = {b: sorted({s for s in c.statuses if s not in SERVED}) for b, c in contenders.items()}
    if any(errors.values()):
        raise RuntimeError(f"requests failed with statuses {errors}; see the server logs.")
    report(samples, contenders, args)


def report(
    samples: dict[str, list[float]], contenders: dict[int, BatchSizeContender], args: argparse.Namespace
) -> None:
    rows, medians = [], {}
    for profile, (max_pixels, max_new_tokens) in PROFILES.items():
        batched, single = samples[f"{profile}/{CONCURRENT}"], samples[f"{profile}/1"]
        speedup = Stats.of(ratios(single, batched))  # = throughput ratio: same request count
        medians[profile] = speedup.median
        tag = f"{profile} (max_pixels {max_pixels}, {max_new_tokens} new tokens)"
        rows += [
            Row(
                f"{tag}: throughput, --max-batch-size {CONCURRENT}",
                Stats.of([CONCURRENT / t for t in batched]),
                "req/s",
            ),
            Row(
                f"{tag}: throughput, --max-batch-size 1", Stats.of([CONCURRENT / t for t in single]), "req/s"
            ),
            Row(f"{tag}: batched / unbatched", speedup, "x"),
        ]
    rows.append(
        Row(
            f"generate batch size (all bursts), --max-batch-size {CONCURRENT}",
            Stats.of(contenders[CONCURRENT].batch_sizes()),
            "jobs",
        )
    )
    print_table(
        f"Server batching: qwen_vl_hf, tiny checkpoint on CPU, {CONCURRENT} concurrent requests, "
        f"{args.repeats} interleaved repetitions",
        rows,
    )
    statuses = [s for c in contenders.values() for s in c.statuses]
    parse_errors = statuses.count(502)
    print(
        f"\n{parse_errors} of {len(statuses)} responses were 502 parse_error (random weights), the rest 200"
    )
    for profile, median in medians.items():
        print(
            verdict(f"{profile}: throughput batched / unbatched", median, f">= {TARGET:g}x", median >= TARGET)
        )


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=4)
    header("Benchmark 4: server dynamic batching vs --max-batch-size 1 (tiny Qwen2.5-VL)")
    with tempfile.TemporaryDirectory(prefix="bench-batching-") as tmp:
        run(args, Path(tmp))


if __name__ == "__main__":
    main()
