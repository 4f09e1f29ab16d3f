"""Reliability under load: 2,000 requests at concurrency 64, then a slow backend under load.

Part 1. A server with the instant ``fixed_score`` backend (default settings) takes a
warm-up of 200 requests, then ``--rounds`` rounds of ``--requests / --rounds`` requests,
64 in flight at a time (16-frame 256x256 MP4 by path, one pooled session per client
thread). Every response must be a 200 with the backend's score. The server's RSS (psutil
on its pid) is read after the warm-up and after every round: a leak shows as a steady climb
from round to round, noise as a wobble.

Part 2. A server whose backend takes 2 s per call (``--max-batch-size 4``) gets 64
episodes at once from ``RewardClient`` with ``timeout`` 0.5 s: every one must come back
as a fallback with ``error_kind`` "timeout", in about the timeout, not the backlog's 32 s.
Then one request with a generous timeout must succeed promptly: the server drops the
queued jobs of clients that went away, so it does not work through 32 s of dead requests.

Exits 1 if any check fails.

    PYTHONPATH=. .venv/bin/python benchmarks/load_test.py [--requests 2000] [--rounds 4]
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from benchmarks.harness import RewardServer, Row, Stats, header, print_table, synthetic_frames, timed
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.scoring import FinishedEpisode, RewardClient, ScoreResult
from vlm_reward.video_io import encode_mp4

CONCURRENCY, WARMUP = 64, 200
SLOW_SECONDS, SLOW_BATCH, CLIENT_TIMEOUT = 2.0, 4, 0.5
MIB = 2**20


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests after the warm-up")
    parser.add_argument("--rounds", type=int, default=4, help="RSS is read after each round")
    args = parser.parse_args()
    if args.rounds < 1 or args.requests < args.rounds:
        parser.error(f"need --rounds >= 1 and --requests >= --rounds, got {args.requests} and {args.rounds}.")
    return args


class LoadClient:
    """Fires ``/score`` requests from CONCURRENCY threads, one pooled session per thread."""

    def __init__(self, endpoint: str, body: dict) -> None:
        self.endpoint, self.body = endpoint, body
        self._local = threading.local()
        self._sessions: list[requests.Session] = []
        self._pool = ThreadPoolExecutor(CONCURRENCY)

    def round(self, n: int) -> tuple[float, list[float], list[str]]:
        """(wall seconds, per-request latencies, error descriptions) of ``n`` requests."""
        started = time.perf_counter()
        outcomes = list(self._pool.map(self._one, range(n)))
        wall = time.perf_counter() - started
        return wall, [s for s, _ in outcomes], [e for _, e in outcomes if e]

    def close(self) -> None:
        self._pool.shutdown()
        for session in self._sessions:
            session.close()

    def _one(self, _: int) -> tuple[float, str]:
        if not hasattr(self._local, "session"):
            self._local.session = requests.Session()
            self._sessions.append(self._local.session)
        started = time.perf_counter()
        try:
            response = self._local.session.post(self.endpoint, json=self.body, timeout=60)
            ok = response.status_code == 200 and response.json().get("score") == 0.8
            error = "" if ok else f"HTTP {response.status_code}: {response.text[:200]}"
        except requests.RequestException as exc:
            error = f"{type(exc).__name__}: {exc}"
        return time.perf_counter() - started, error


def load(args: argparse.Namespace, tmp: Path) -> list[str]:
    """Part 1; returns the failed checks."""
    video = tmp / "episode.mp4"
    encode_mp4(synthetic_frames(16), video, fps=4)
    server = RewardServer(
        ["--backend", "fixed_score", "--model", "m", "--video-root", str(tmp)], tmp / "load.log"
    )
    client = LoadClient(server.endpoint, {"task_text": "put the bowl on the plate", "video_path": str(video)})
    with server:
        _, _, warmup_errors = client.round(WARMUP)
        rss = [server.rss_bytes()]
        walls, latencies, errors = [], [], list(warmup_errors)
        for _ in range(args.rounds):
            wall, lat, errs = client.round(args.requests // args.rounds)
            walls.append(wall)
            latencies.append(lat)
            errors += errs
            rss.append(server.rss_bytes())
        client.close()
    per_round = args.requests // args.rounds
    print_table(
        f"Load: {per_round * args.rounds} requests in {args.rounds} rounds at concurrency {CONCURRENCY} "
        f"(after {WARMUP} warm-up), instant backend",
        [
            Row("throughput per round", Stats.of([per_round / w for w in walls]), "req/s"),
            Row(
                "round-trip latency p50, per round", Stats.of([_pct(lat, 50) for lat in latencies]), "ms", 1e3
            ),
            Row(
                "round-trip latency p99, per round", Stats.of([_pct(lat, 99) for lat in latencies]), "ms", 1e3
            ),
            Row("server RSS after each round", Stats.of(rss[1:]), "MiB", 1 / MIB),
        ],
    )
    print("\nserver RSS (MiB): after warm-up " + " -> ".join(f"{r / MIB:.1f}" for r in rss))
    growth = (rss[-1] - rss[0]) / MIB
    total = WARMUP + per_round * args.rounds
    print(f"RSS growth after warm-up: {growth:+.1f} MiB; errors: {len(errors)} of {total}")
    return [f"{len(errors)} requests failed, first: {errors[0]}"] if errors else []


def slow_backend(tmp: Path) -> list[str]:
    """Part 2; returns the failed checks."""
    kwargs = json.dumps({"generate_seconds": SLOW_SECONDS})
    args = ["--backend", "fixed_score", "--model", "m", "--video-root", str(tmp), "--backend-kwargs", kwargs]
    server = RewardServer([*args, "--max-batch-size", str(SLOW_BATCH)], tmp / "slow.log")
    cfg = RewardModelConfig(
        enable=True,
        endpoint=server.endpoint,
        backend="fixed_score",
        timeout=CLIENT_TIMEOUT,
        max_concurrency=CONCURRENCY,
        temp_video_dir=str(tmp),
    )
    episodes = [
        FinishedEpisode(f"task {i}", list(synthetic_frames(8, size=64, seed=i)), i % 2 == 0)
        for i in range(64)
    ]
    results: list[ScoreResult] = []
    with server:
        client = RewardClient(cfg)
        wall = timed(lambda: results.extend(client.score_many(episodes)))
        client.close()
        time.sleep(CLIENT_TIMEOUT)  # let the server see the disconnects
        started = time.perf_counter()
        body = {"task_text": "after the storm", "video_b64": _b64_video(tmp)}
        later = requests.post(server.endpoint, json=body, timeout=120)
        recovery = time.perf_counter() - started
    kinds = sorted({r.error_kind for r in results})
    backlog = len(episodes) / SLOW_BATCH * SLOW_SECONDS
    print(
        f"\nSlow backend ({SLOW_SECONDS} s per call, --max-batch-size {SLOW_BATCH}, backlog {backlog:.0f} s):"
    )
    fallbacks = sum(r.fallback for r in results)
    print(f"  64 episodes, client timeout {CLIENT_TIMEOUT} s: {fallbacks} fallbacks, error kinds {kinds}")
    print(f"  score_many took {wall:.2f} s")
    print(f"  a later request: HTTP {later.status_code} after {recovery:.2f} s")
    failed = []
    if not all(r.fallback and r.error_kind == "timeout" for r in results):
        failed.append(f"not every episode timed out cleanly: kinds {kinds}")
    if later.status_code != 200 or recovery > 2 * SLOW_SECONDS + 2:
        failed.append(f"the server did not recover: HTTP {later.status_code} after {recovery:.1f} s")
    return failed


def _b64_video(tmp: Path) -> str:
    path = tmp / "small.mp4"
    encode_mp4(synthetic_frames(4, size=64), path, fps=4)
    return base64.b64encode(path.read_bytes()).decode()


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))]


def main() -> None:
    args = parse_args()
    header("Reliability: server under load")
    with tempfile.TemporaryDirectory(prefix="load-test-") as tmp:
        failed = load(args, Path(tmp)) + slow_backend(Path(tmp))
    print()
    for failure in failed:
        print(f"FAILED: {failure}")
    print("all checks passed" if not failed else f"{len(failed)} checks failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
