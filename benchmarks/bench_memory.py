"""Benchmark 6a: memory of the env's frame cache over one full 512-step episode.

One env of the project's LiberoEnv with the reward model on (an instant local server)
runs one episode of ``max_episode_steps`` (512) with idle actions in chunks of 16. The
cache (``env._frames``: one 256x256x3 uint8 main image per step, reset frame included) is
measured after the reset, at the moment the episode is scored (its peak: the scoring call
is wrapped to look), after the chunk (scored episodes are dropped) and after the next
reset. This process's RSS (psutil) is shown alongside; it is a high-water mark (the
allocator keeps freed memory for reuse) and also holds each chunk's observations while the
chunk runs. The server's RSS under load is in ``benchmarks/load_test.py``.

One episode: the byte counts are exact, not samples (n = 1).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_memory.py [--max-episode-steps 512]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import psutil

from benchmarks.harness import RewardServer, header, idle_actions, libero_env, timed

MIB = 2**20
CHUNK = 16  # small: a chunk's observations are held until it returns, which shows in RSS


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--max-episode-steps", type=int, default=512, help="episode length (a multiple of 16)"
    )
    args = parser.parse_args()
    if args.max_episode_steps < CHUNK or args.max_episode_steps % CHUNK:
        parser.error(
            f"--max-episode-steps must be a positive multiple of {CHUNK}, got {args.max_episode_steps}."
        )
    return args


def _cache(env: Any) -> tuple[int, int]:
    """(frames, bytes) held by env 0's frame cache."""
    frames = env._frames[0]
    return len(frames), sum(f.nbytes for f in frames)


def _run_episode(env: Any, steps: int) -> None:
    """Idle chunks to the end of the episode, keeping no observations (they would count in RSS)."""
    for _ in range(steps // CHUNK):
        env.chunk_step(idle_actions(1, CHUNK))


def run(args: argparse.Namespace, tmp: Path) -> list[tuple[str, int, int, int]]:
    """(moment, frames, cache bytes, process RSS) at each point of interest."""
    me = psutil.Process()
    points: list[tuple[str, int, int, int]] = []

    def mark(moment: str, env: Any) -> None:
        points.append((moment, *_cache(env), me.memory_info().rss))

    server = RewardServer(
        ["--backend", "fixed_score", "--model", "m", "--video-root", str(tmp)], tmp / "s.log"
    )
    cfg = {"enable": True, "endpoint": server.endpoint, "backend": "fixed_score", "temp_video_dir": str(tmp)}
    with server, libero_env(args.max_episode_steps, cfg) as env:
        score_many = env._client.score_many

        def scoring(episodes: Any) -> Any:
            if episodes:  # called at the end of every chunk, with nothing to score mid-episode
                mark("when the episode is scored (peak)", env)
            return score_many(episodes)

        env._client.score_many = scoring
        env.reset()
        mark("after reset", env)
        seconds = timed(lambda: _run_episode(env, args.max_episode_steps))
        mark("after the last chunk (scored, dropped)", env)
        env.reset()
        mark("after the next reset", env)
    per_step = seconds / args.max_episode_steps
    print(f"\n{args.max_episode_steps} steps in {seconds:.0f} s ({per_step * 1e3:.0f} ms/step)")
    return points


def report(points: list[tuple[str, int, int, int]], steps: int) -> None:
    print(f"\nFrame cache of one env, max_episode_steps {steps}, 256x256x3 uint8 main images")
    width = max(len(p[0]) for p in points)
    print(f"{'':{width}}  {'frames':>7}  {'cache MiB':>10}  {'process RSS MiB':>16}")
    for moment, frames, nbytes, rss in points:
        print(f"{moment:{width}}  {frames:7d}  {nbytes / MIB:10.2f}  {rss / MIB:16.1f}")
    peak = max(p[2] for p in points)
    print(
        f"\npeak cache per env: {peak / MIB:.1f} MiB ({peak / max(p[1] for p in points):.0f} bytes per frame)"
    )


def main() -> None:
    args = parse_args()
    header("Benchmark 6a: frame cache memory per env")
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        points = run(args, Path(tmp))
    report(points, args.max_episode_steps)


if __name__ == "__main__":  # LIBERO's env processes are spawned: the guard is required
    main()
