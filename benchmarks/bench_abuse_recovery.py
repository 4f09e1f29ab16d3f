"""Issue 13: how long a normal request takes right after abusive ones, vs on an idle server.

The server is ``qwen_vl_hf`` on the tiny checkpoint (a real ``generate``: about 2 ms
per token on 2 cores, and it never emits its end token, so a large budget is a runaway).
Per repetition, side by side: a normal request (16 frames, the backend's default answer
length) on the idle server, and the same request sent right after each abusive one:

- ``max_new_tokens: 10**9`` with a 2 s client timeout (refused with 422 by a capped server;
  an uncapped one starts generating forever);
- ``max_new_tokens: 4096`` (the cap itself) with a 2 s client timeout: the client gives up
  mid-generation, and the server should stop the work nobody waits for.

A normal request that is not answered within ``--give-up-s`` is reported as timed out and
ends the run (the server is stuck). ``--server-repo`` runs the server of another checkout,
e.g. a worktree of the commit before the caps, for the "before" numbers:

    git worktree add /tmp/before <commit> && \\
    PYTHONPATH=. .venv/bin/python benchmarks/bench_abuse_recovery.py --server-repo /tmp/before
    PYTHONPATH=. .venv/bin/python benchmarks/bench_abuse_recovery.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

from benchmarks.harness import (
    REPO,
    RewardServer,
    Row,
    Stats,
    header,
    parse_args,
    print_table,
    ratios,
    synthetic_frames,
)
from vlm_reward.tools.tiny_checkpoint import build_tiny_qwen2_5_vl
from vlm_reward.video_io import encode_mp4

NORMAL = {"task_text": "put the bowl on the plate", "video_path": "episode.mp4", "nframes": 16}
ABUSE = {
    "after max_new_tokens=10**9": {"max_new_tokens": 10**9},
    "after a client left a 4096-token run": {"max_new_tokens": 4096},
}
ABUSE_CLIENT_TIMEOUT_S = 2.0


class Stuck(RuntimeError):
    """A normal request was not answered within the give-up time."""


def normal_latency(server: RewardServer, give_up_s: float) -> float:
    """Seconds for one normal request (any answer counts: the tiny model's is a parse error)."""
    start = time.perf_counter()
    try:
        requests.post(server.endpoint, json=NORMAL, timeout=give_up_s)
    except requests.exceptions.Timeout:
        raise Stuck(f"a normal request was not answered within {give_up_s:g} s") from None
    return time.perf_counter() - start


def abuse(server: RewardServer, backend_kwargs: dict[str, Any]) -> str:
    """Send one abusive request; what happened to it (its status, or that the client gave up)."""
    try:
        response = requests.post(
            server.endpoint, json={**NORMAL, "backend_kwargs": backend_kwargs}, timeout=ABUSE_CLIENT_TIMEOUT_S
        )
    except requests.exceptions.Timeout:
        return "client timed out"
    return str(response.status_code)


def run(server: RewardServer, repeats: int, give_up_s: float) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"idle server": [], **{name: [] for name in ABUSE}}
    normal_latency(server, give_up_s)  # warm-up: first request pays for imports
    for rep in range(repeats):
        samples["idle server"].append(normal_latency(server, give_up_s))
        for name, backend_kwargs in ABUSE.items():
            outcome = abuse(server, backend_kwargs)
            print(f"  rep {rep}: {name}: abusive request -> {outcome}")
            samples[name].append(normal_latency(server, give_up_s))
    return samples


def main(args: argparse.Namespace) -> None:
    header("Abuse recovery: a normal request right after abusive ones (qwen_vl_hf, tiny checkpoint)")
    print(f"# server from {args.server_repo}")
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        checkpoint = build_tiny_qwen2_5_vl(tmp / "tiny")
        encode_mp4(synthetic_frames(16), tmp / "episode.mp4", fps=4)
        server_args = ["--backend", "qwen_vl_hf", "--model", str(checkpoint), "--video-root", str(tmp)]
        server = RewardServer(server_args, tmp / "server.log", plugins=(), repo=args.server_repo)
        try:
            server.wait_ready()
            samples = run(server, args.repeats, args.give_up_s)
        except Stuck as exc:
            print(f"\nSTUCK: {exc}; the server kept working for a client that had left.")
            return
        finally:
            server.stop()
            if args.log:
                shutil.copy(tmp / "server.log", args.log)
    idle = samples["idle server"]
    rows = [Row(name, Stats.of(values), "s") for name, values in samples.items()]
    rows += [Row(f"{name} / idle", Stats.of(ratios(samples[name], idle)), "x") for name in ABUSE]
    print_table(f"Normal request latency, {args.repeats} repetitions", rows)


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server-repo", type=Path, default=REPO, help="checkout whose server runs")
    parser.add_argument("--give-up-s", type=float, default=120.0, help="a normal request's timeout")
    parser.add_argument("--log", type=Path, default=None, help="copy the server log here")


if __name__ == "__main__":
    main(parse_args(__doc__.splitlines()[0], repeats=5, add=_add))
