"""Benchmark 2: 64 episodes ending in one chunk_step, scored concurrently vs one by one.

The server's backend takes a fixed 0.5 s per ``generate`` call whatever the batch size
(the ``counting`` test backend, which also logs every call's batch size), and runs with
``--max-batch-size 64``, so a perfect client pays 0.5 s once. Per repetition, side by
side: ``RewardClient.score_many`` over the 64 episodes (``max_concurrency`` 64), and
``score`` on each in turn. Each episode is 64 frames of 256x256 (16 are sampled).

Two servers are compared: the default ``--max-wait-ms 20`` and a wider 300 ms window.
With 64 MP4s to encode on few cores, requests reach the server spread over a second or
more; the window decides how many share the first ``generate`` call. The client's CPU
floor (encoding all 64 MP4s on one thread per CPU, no requests) is measured alongside: no
batching can make ``score_many`` faster than that floor plus one 0.5 s call.

Target: one by one / concurrent >= 30x (median of per-repetition ratios).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_concurrent_scoring.py [--repeats 3] [--latency 0.5]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

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
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.scoring import FinishedEpisode, RewardClient, sample_frame_indices
from vlm_reward.video_io import encode_mp4

TARGET = 30.0
EPISODES, FRAMES, LATENCY_S = 64, 64, 0.5
WINDOWS_MS = (20, 300)


def _add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--episodes", type=int, default=EPISODES, help="episodes ending together")
    parser.add_argument("--latency", type=float, default=LATENCY_S, help="seconds per generate call")


def _episodes(n: int) -> list[FinishedEpisode]:
    """``n`` episodes of FRAMES frames, each a different slice of one moving scene."""
    frames = synthetic_frames(n + FRAMES)
    # The task's digit is the score the counting backend answers (digit / 10).
    return [
        FinishedEpisode(f"put object {i % 10} away", list(frames[i : i + FRAMES]), False) for i in range(n)
    ]


class BatchWindowContender:
    """One server (with its batch log) and a client for it."""

    def __init__(self, tmp: Path, window_ms: int, episodes: int, latency_s: float) -> None:
        self.calls = tmp / f"calls_{window_ms}.jsonl"
        kwargs = json.dumps({"log_path": str(self.calls), "generate_seconds": latency_s})
        args = ["--backend", "counting", "--model", "m", "--video-root", str(tmp), "--backend-kwargs", kwargs]
        args += ["--max-batch-size", str(episodes), "--max-wait-ms", str(window_ms)]
        self.server = RewardServer(args, tmp / f"server_{window_ms}.log").wait_ready()
        cfg = RewardModelConfig(
            enable=True,
            endpoint=self.server.endpoint,
            backend="counting",
            temp_video_dir=str(tmp),
            max_concurrency=episodes,
            timeout=120,
        )
        self.client = RewardClient(cfg)
        self.batches_per_run: list[int] = []

    def concurrent(self, episodes: list[FinishedEpisode]) -> float:
        before = self._n_calls()
        seconds = timed(lambda: _check(self.client.score_many(episodes)))
        self.batches_per_run.append(self._n_calls() - before)
        return seconds

    def one_by_one(self, episodes: list[FinishedEpisode]) -> float:
        return timed(lambda: _check([self.client.score(e) for e in episodes]))

    def close(self) -> None:
        self.client.close()
        self.server.stop()

    def _n_calls(self) -> int:
        return len(self.calls.read_text().splitlines()) if self.calls.exists() else 0


def _check(results: list) -> None:
    failed = [r.error for r in results if r.fallback]
    if failed:
        raise RuntimeError(f"{len(failed)} episodes fell back; first error: {failed[0]}")


def _encode_all(episodes: list[FinishedEpisode], tmp: Path) -> float:
    """The client's CPU floor: encode every episode's MP4 on one thread per CPU, no requests."""

    def encode(i: int) -> None:
        frames = episodes[i].frames
        picked = np.stack([frames[j] for j in sample_frame_indices(len(frames), 16)])
        encode_mp4(picked, tmp / f"encode_only_{i}.mp4", fps=4)

    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        return timed(lambda: list(pool.map(encode, range(len(episodes)))))


def run(args: argparse.Namespace, tmp: Path) -> None:
    episodes = _episodes(args.episodes)
    contenders = {w: BatchWindowContender(tmp, w, args.episodes, args.latency) for w in WINDOWS_MS}
    try:
        measures = {f"concurrent_{w}": (lambda c=c: c.concurrent(episodes)) for w, c in contenders.items()}
        # One by one does not depend on the window: time it against the default server.
        measures["one_by_one"] = lambda: contenders[WINDOWS_MS[0]].one_by_one(episodes)
        measures["encode_all"] = lambda: _encode_all(episodes, tmp)
        for c in contenders.values():  # connections, imports, the server's first requests
            c.client.score_many(episodes[:4])
        # No warm-up repetition: one by one alone takes ~36 s per repetition.
        samples = interleave(measures, repeats=args.repeats, warmup=0)
        batches = {w: c.batches_per_run for w, c in contenders.items()}
    finally:
        for c in contenders.values():
            c.close()
    report(samples, batches, args)


def report(samples: dict[str, list[float]], batches: dict[int, list[int]], args: argparse.Namespace) -> None:
    rows = [Row(f"one by one ({args.episodes} x score)", Stats.of(samples["one_by_one"]), "s")]
    for w in WINDOWS_MS:
        rows.append(Row(f"score_many, --max-wait-ms {w}", Stats.of(samples[f"concurrent_{w}"]), "s"))
    floor = samples["encode_all"]
    rows.append(
        Row(f"client CPU floor: encode {args.episodes} MP4s, {os.cpu_count()} threads", Stats.of(floor), "s")
    )
    # Even with every request in one batch, score_many cannot beat encoding + one call.
    best = [one / (enc + args.latency) for one, enc in zip(samples["one_by_one"], floor, strict=True)]
    label = f"best possible speed-up here: one by one / (floor + {args.latency:g} s)"
    rows.append(Row(label, Stats.of(best), "x"))
    for w in WINDOWS_MS:
        speedup = ratios(samples["one_by_one"], samples[f"concurrent_{w}"])
        rows.append(Row(f"speed-up, --max-wait-ms {w}", Stats.of(speedup), "x"))
    for w in WINDOWS_MS:
        rows.append(Row(f"generate calls per score_many, --max-wait-ms {w}", Stats.of(batches[w]), "calls"))
    print_table(
        f"Concurrent scoring: {args.episodes} episodes, backend {args.latency:g} s per call, "
        f"--max-batch-size {args.episodes}, {args.repeats} interleaved repetitions",
        rows,
    )
    print()
    for w in WINDOWS_MS:
        speedup = Stats.of(ratios(samples["one_by_one"], samples[f"concurrent_{w}"])).median
        print(verdict(f"speed-up with --max-wait-ms {w}", speedup, f">= {TARGET:g}x", speedup >= TARGET))


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=3, add=_add_args)
    if args.episodes < 2:
        raise SystemExit(f"--episodes must be at least 2, got {args.episodes}.")
    if not args.latency >= 0:
        raise SystemExit(f"--latency must be >= 0 seconds, got {args.latency}.")
    header("Benchmark 2: concurrent scoring vs one by one")
    with tempfile.TemporaryDirectory(prefix="bench-concurrent-") as tmp:
        run(args, Path(tmp))


if __name__ == "__main__":
    main()
