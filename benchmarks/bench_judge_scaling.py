"""Benchmark 12 (issue 39): does the judge path scale? 8 concurrent requests against serial ones.

One ``qwen_vl_hf`` server on the tiny random-weight Qwen2.5-VL (or ``--family qwen3_vl``), on the
CPU, default server settings (``--max-batch-size 8``). Per repetition, a fresh set of
``--requests`` distinct videos (16 frames of 256x256 each, a different scene per request: no
request repeats another's pixels or task text, so no cache of any kind could answer one from
another), sent at the env's default request (16 frames, ``max_pixels`` 200704, score mode
probability):

- ``serial``: one request after another, each sent when the last was answered;
- ``8 concurrent``: the same requests from 8 client threads.

Throughput = requests / wall time; the acceptance ratio is taken per repetition, contender
against contender, before the median (:func:`benchmarks.harness.interleave`). ``--before PATH``
runs a second server from another checkout (``git worktree add /tmp/before main``) beside this
one, with its own serial and concurrent contenders in the same interleaved run, so the "before"
numbers come from the same minutes of this noisy machine. ``--native`` adds both contenders with
``native_frame_size`` on (issue 39, deliverable 4) and prints the prompt tokens of each request
shape.

Target (issue 39, on this CPU): 8 concurrent >= 1.5x the throughput of serial.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_judge_scaling.py [--repeats 5] [--before /tmp/before]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

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
from vlm_reward.judging.model_family import FAMILIES, QWEN2_5_VL
from vlm_reward.protocol import DEFAULT_MAX_PIXELS, DEFAULT_NFRAMES
from vlm_reward.tools.tiny_checkpoint import build_tiny_checkpoint
from vlm_reward.video_io import encode_mp4

TARGET = 1.5
CONCURRENCY = 8
SERVED = (200, 502)  # 502: the random model's answer held no score; the whole path still ran
TASKS = ("put the red block on the plate", "open the top drawer", "turn on the stove", "pick up the soup")


class Videos:
    """A fresh set of distinct videos per repetition, in the servers' video root."""

    def __init__(self, root: Path, count: int) -> None:
        self.root, self.count, self.generation = root, count, 0
        self.names: list[str] = []

    def renew(self) -> None:
        """Write ``count`` new videos (seeded by generation and index) and forget the last set."""
        for name in self.names:
            (self.root / name).unlink(missing_ok=True)
        self.generation += 1
        self.names = []
        for i in range(self.count):
            seed = self.generation * 1000 + i
            name = f"ep_{self.generation}_{i}.mp4"
            encode_mp4(synthetic_frames(DEFAULT_NFRAMES, seed=seed), self.root / name, fps=4)
            self.names.append(name)

    def bodies(self, native: bool) -> list[dict[str, Any]]:
        """One request per video, each with its own task text."""
        extra = {"native_frame_size": True} if native else {}
        return [
            {
                "task_text": f"{TASKS[i % len(TASKS)]} (episode {self.generation}.{i})",
                "video_path": name,
                "nframes": DEFAULT_NFRAMES,
                "max_pixels": DEFAULT_MAX_PIXELS,
                **extra,
            }
            for i, name in enumerate(self.names)
        ]


def send_all(endpoint: str, bodies: list[dict[str, Any]], concurrency: int, statuses: list[int]) -> float:
    """Wall seconds to have every body answered with ``concurrency`` client threads."""
    lock = threading.Lock()

    def post(body: dict[str, Any]) -> None:
        status = requests.post(endpoint, json=body, timeout=600).status_code
        with lock:
            statuses.append(status)

    if concurrency == 1:
        return timed(lambda: [post(b) for b in bodies])
    with ThreadPoolExecutor(concurrency) as pool:
        return timed(lambda: list(pool.map(post, bodies)))


def measures(
    servers: dict[str, RewardServer], videos: Videos, native: bool, statuses: list[int]
) -> dict[str, Callable[[], float]]:
    """Every contender: each server serial and concurrent (and with native frames when asked)."""
    shapes = [False, True] if native else [False]
    out: dict[str, Callable[[], float]] = {}
    for tag, server in servers.items():
        for shape in shapes if tag == "after" else [False]:
            for concurrency in (1, CONCURRENCY):
                name = f"{tag}{' native' if shape else ''}/{concurrency}"
                out[name] = lambda s=server, n=shape, c=concurrency: send_all(
                    s.endpoint, videos.bodies(n), c, statuses
                )
    return out


def with_fresh_videos(
    run_all: dict[str, Callable[[], float]], videos: Videos
) -> dict[str, Callable[[], float]]:
    """Renew the videos before the first contender of each repetition."""
    first = next(iter(run_all))

    def renewing(name: str, fn: Callable[[], float]) -> Callable[[], float]:
        def run() -> float:
            if name == first:
                videos.renew()
            return fn()

        return run

    return {name: renewing(name, fn) for name, fn in run_all.items()}


def prompt_tokens(checkpoint: Path, video: Path, native: bool) -> int:
    """The prompt tokens of one request shape, as the backend builds them (in this process)."""
    from vlm_reward.backends.base import ScoreJob
    from vlm_reward.backends.qwen_vl_hf import QwenHFBackend

    backend = QwenHFBackend(str(checkpoint))
    backend.load()
    job = ScoreJob(TASKS[0], str(video), DEFAULT_NFRAMES, DEFAULT_MAX_PIXELS, 4.0, native_frame_size=native)
    return int(backend.prepare(job).inputs["input_ids"].shape[1])


def run(args: argparse.Namespace, tmp: Path) -> None:
    checkpoint = build_tiny_checkpoint(tmp / "tiny", args.family)
    root = tmp / "videos"
    root.mkdir()
    videos = Videos(root, args.requests)
    repos = {"after": Path(__file__).resolve().parents[1]}
    if args.before is not None:
        repos["before"] = args.before
    common = ["--backend", "qwen_vl_hf", "--model", str(checkpoint), "--video-root", str(root)]
    servers = {
        tag: RewardServer(common, tmp / f"server_{tag}.log", plugins=(), repo=repo)
        for tag, repo in repos.items()
    }
    statuses: list[int] = []
    try:
        for server in servers.values():
            server.wait_ready()
        samples = interleave(
            with_fresh_videos(measures(servers, videos, args.native, statuses), videos), args.repeats
        )
    finally:
        for server in servers.values():
            server.stop()
    failed = sorted({s for s in statuses if s not in SERVED})
    if failed:
        raise RuntimeError(f"requests failed with statuses {failed}; see the server logs in {tmp}.")
    tokens = {}
    if args.native:
        videos.renew()
        tokens = {n: prompt_tokens(checkpoint, root / videos.names[0], n) for n in (False, True)}
    report(samples, args, tokens, statuses.count(502), len(statuses))


def report(
    samples: dict[str, list[float]],
    args: argparse.Namespace,
    tokens: dict[bool, int],
    parse_errors: int,
    total: int,
) -> None:
    rows, verdicts = [], []
    groups = sorted({name.rsplit("/", 1)[0] for name in samples}, key=lambda g: (g != "after", g))
    for group in groups:
        serial, concurrent = samples[f"{group}/1"], samples[f"{group}/{CONCURRENCY}"]
        speedup = Stats.of(ratios(serial, concurrent))  # same request count: the throughput ratio
        rows += [
            Row(f"{group}: serial, requests/s", Stats.of([args.requests / t for t in serial]), "1/s"),
            Row(
                f"{group}: {CONCURRENCY} concurrent, requests/s",
                Stats.of([args.requests / t for t in concurrent]),
                "1/s",
            ),
            Row(f"{group}: {CONCURRENCY} concurrent / serial", speedup, "x"),
        ]
        if group == "after":
            verdicts.append(
                verdict(
                    f"{CONCURRENCY} concurrent / serial",
                    speedup.median,
                    f">= {TARGET:g}x",
                    speedup.median >= TARGET,
                )
            )
    for group in groups[1:]:
        for concurrency in (1, CONCURRENCY):
            gain = Stats.of(ratios(samples[f"{group}/{concurrency}"], samples[f"after/{concurrency}"]))
            rows.append(Row(f"after / {group} throughput, {concurrency} at a time", gain, "x"))
    print_table(
        f"Judge scaling: qwen_vl_hf, tiny {args.family}, {args.requests} distinct videos a repetition, "
        f"{args.repeats} interleaved repetitions",
        rows,
    )
    if tokens:
        saved = 1 - tokens[True] / tokens[False]
        print(f"\nprompt tokens: {tokens[False]} upscaled, {tokens[True]} native ({saved:.1%} fewer)")
    print(f"\n{parse_errors} of {total} responses were 502 parse_error (random weights), the rest 200")
    for line in verdicts:
        print(line)


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--requests", type=int, default=16, help="distinct videos per repetition (default 16)"
    )
    parser.add_argument("--family", choices=sorted(FAMILIES), default=QWEN2_5_VL.model_type)
    parser.add_argument("--before", type=Path, default=None, help="another checkout whose server runs beside")
    parser.add_argument("--native", action="store_true", help="also measure native_frame_size requests")


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=5, add=_add)
    header("Benchmark 12: judge scaling, 8 concurrent vs serial (issue 39)")
    with tempfile.TemporaryDirectory(prefix="bench-judge-scaling-") as tmp:
        run(args, Path(tmp))


if __name__ == "__main__":
    main()
