"""Benchmark 5: the server's own cost per ``/score``, with an instant backend.

One client, one request at a time, a 16-frame 256x256 MP4 (the size the env sends).
Per repetition, side by side: ``GET /health`` (HTTP and framework only), ``/score`` with
the video by path and inline (``video_b64``, about 4/3 of the MP4's bytes in the JSON),
against a server with the default 20 ms batching window and one with
``--max-wait-ms 0``. The server's own ``latency_s`` (from arrival to answer) is reported
too: the rest of the round trip is the client and the loopback.

No target: the numbers say what an instant backend costs, i.e. the floor under any real one.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_server_overhead.py [--repeats 100]
"""

from __future__ import annotations

import argparse
import base64
import tempfile
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
    synthetic_frames,
    timed,
)
from vlm_reward.video_io import encode_mp4

WINDOWS_MS = (20, 0)


class WindowContender:
    """A server with one batching window, and one pooled client session for it."""

    def __init__(self, root: Path, window_ms: int) -> None:
        args = ["--backend", "fixed_score", "--model", "m", "--video-root", str(root)]
        self.server = RewardServer([*args, "--max-wait-ms", str(window_ms)], root / f"server_{window_ms}.log")
        self.session = requests.Session()
        self.server_latency: dict[str, list[float]] = {"path": [], "inline": []}

    def health(self) -> float:
        return timed(lambda: self.session.get(self.server.url("/health"), timeout=30).raise_for_status())

    def score(self, transport: str, body: dict[str, Any]) -> float:
        """Round trip of one ``/score``; records the server's own ``latency_s``."""
        response: list[requests.Response] = []
        seconds = timed(
            lambda: response.append(self.session.post(self.server.endpoint, json=body, timeout=30))
        )
        response[0].raise_for_status()
        self.server_latency[transport].append(response[0].json()["latency_s"])
        return seconds


def run(args: argparse.Namespace, tmp: Path) -> None:
    video = tmp / "episode.mp4"
    encode_mp4(synthetic_frames(16), video, fps=4)
    bodies = {
        "path": {"task_text": "put the bowl on the plate", "video_path": str(video)},
        "inline": {
            "task_text": "put the bowl on the plate",
            "video_b64": base64.b64encode(video.read_bytes()).decode(),
        },
    }
    contenders = {w: WindowContender(tmp, w) for w in WINDOWS_MS}
    try:
        for c in contenders.values():
            c.server.wait_ready()
        measures = {}
        for w, c in contenders.items():
            measures[f"health/{w}"] = c.health
            for transport, body in bodies.items():
                measures[f"{transport}/{w}"] = lambda c=c, t=transport, b=body: c.score(t, b)
        samples = interleave(measures, args.repeats, warmup=3)
    finally:
        for c in contenders.values():
            c.session.close()
            c.server.stop()
    report(samples, contenders, video.stat().st_size, args)


def report(
    samples: dict[str, list[float]],
    contenders: dict[int, WindowContender],
    mp4_bytes: int,
    args: argparse.Namespace,
) -> None:
    rows = []
    for w, c in contenders.items():
        rows.append(Row(f"GET /health, --max-wait-ms {w}", Stats.of(samples[f"health/{w}"]), "ms", 1e3))
        for transport in ("path", "inline"):
            rows.append(
                Row(
                    f"/score {transport}, --max-wait-ms {w}", Stats.of(samples[f"{transport}/{w}"]), "ms", 1e3
                )
            )
            # [3:]: the server-side list also holds the 3 warm-up repetitions.
            inside = Stats.of(c.server_latency[transport][3:])
            rows.append(Row("  of which inside the server (latency_s)", inside, "ms", 1e3))
    print_table(
        f"Server overhead: instant backend, 16-frame 256x256 MP4 ({mp4_bytes / 1024:.0f} KiB), "
        f"one request at a time, {args.repeats} interleaved repetitions",
        rows,
    )


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=100)
    header("Benchmark 5: server overhead per /score (instant backend)")
    with tempfile.TemporaryDirectory(prefix="bench-server-overhead-") as tmp:
        run(args, Path(tmp))


if __name__ == "__main__":
    main()
