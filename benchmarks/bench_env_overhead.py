"""Benchmark 3: chunk_step of the project's LiberoEnv with the reward model on vs off.

Two envs (1 LIBERO env each, same task and initial state, idle actions): one with
``reward_model.enable: False`` (RLinf's class unchanged), one with it on (pointed at a
local instant server, which it never calls: ``max_episode_steps`` 512 leaves every timed
chunk mid-episode, checked). Their ``chunk_step`` calls are interleaved, alternating which
env goes first, and each pair gives one ratio. Two clocks: wall time, which is what the
target is about but moves by tens of percent when other jobs share the CPUs, and CPU time
of the env's processes, which leaves out the time spent waiting for them. While the
episode runs, the only extra work with the model on is caching each step's main image (a
numpy copy); it is also timed directly, by wrapping the env's ``_track_step``.

Target: on / off <= 1.02 (median of per-pair ratios).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_env_overhead.py [--repeats 32] [--chunk 4]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from benchmarks.harness import (
    RewardServer,
    Row,
    Stats,
    header,
    idle_actions,
    interleave,
    libero_env,
    parse_args,
    print_table,
    ratios,
    timed,
    verdict,
)

TARGET = 1.02
MAX_EPISODE_STEPS = 512


def _add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chunk", type=int, default=4, help="steps per chunk_step")


class CacheTimer:
    """Wraps an env's ``_track_step`` (the frame cache) and sums the time spent in it."""

    def __init__(self, env: Any) -> None:
        self.seconds = 0.0
        inner = env._track_step

        def track_step(*args: Any) -> None:
            start = time.perf_counter()
            inner(*args)
            self.seconds += time.perf_counter() - start

        env._track_step = track_step

    def take(self) -> float:
        """Seconds since the last call."""
        seconds, self.seconds = self.seconds, 0.0
        return seconds


class EnvContender:
    """One env, its idle chunk, and per-chunk wall and CPU time.

    CPU time (user + system of this process and the env's LIBERO worker processes) is
    what the env itself burns: it leaves out the time lost waiting while other jobs hold
    the CPUs (cache and clock effects of their load remain).
    """

    def __init__(self, env: Any, chunk: int) -> None:
        self.env = env
        self.actions = idle_actions(1, chunk)
        self.procs = [psutil.Process(), *(psutil.Process(w.process.pid) for w in env.env.workers)]
        self.cpu: list[float] = []
        self.ended = False

    def chunk_step(self) -> float:
        """Run one chunk; return its wall time and record its CPU time."""
        cpu, start = self._cpu_seconds(), time.perf_counter()
        _, _, terminations, truncations, _ = self.env.chunk_step(self.actions)
        wall = time.perf_counter() - start
        self.cpu.append(self._cpu_seconds() - cpu)
        self.ended |= bool((terminations | truncations).any())
        return wall

    def _cpu_seconds(self) -> float:
        return sum(t.user + t.system for t in (p.cpu_times() for p in self.procs))


def run(args: argparse.Namespace, tmp: Path) -> None:
    server = RewardServer(
        ["--backend", "fixed_score", "--model", "m", "--video-root", str(tmp)], tmp / "s.log"
    )
    on_cfg = {
        "enable": True,
        "endpoint": server.endpoint,
        "backend": "fixed_score",
        "temp_video_dir": str(tmp),
    }
    with (
        server.wait_ready(),
        libero_env(MAX_EPISODE_STEPS) as off_env,
        libero_env(MAX_EPISODE_STEPS, on_cfg) as on_env,
    ):
        reset = {"off": timed(off_env.reset), "on": timed(on_env.reset)}
        off, on, timer = (
            EnvContender(off_env, args.chunk),
            EnvContender(on_env, args.chunk),
            CacheTimer(on_env),
        )
        cache_s: list[float] = []

        def on_chunk() -> float:
            wall = on.chunk_step()
            cache_s.append(timer.take())
            return wall

        samples = interleave({"off": off.chunk_step, "on": on_chunk}, args.repeats)
        cached = on_env._frames[0]
        cache = (len(cached), sum(frame.nbytes for frame in cached))
    if off.ended or on.ended:
        raise RuntimeError("an episode ended inside a timed chunk: lower --repeats or --chunk.")
    # [1:]: the side lists also hold the warm-up pair, which interleave discarded.
    samples.update(off_cpu=off.cpu[1:], on_cpu=on.cpu[1:], cache=cache_s[1:])
    report(samples, reset, cache, args)


def report(
    samples: dict[str, list[float]], reset: dict[str, float], cache: tuple[int, int], args: argparse.Namespace
) -> None:
    wall = Stats.of(ratios(samples["on"], samples["off"]))
    cpu = Stats.of(ratios(samples["on_cpu"], samples["off_cpu"]))
    share = Stats.of(ratios(samples["cache"], samples["on"]))
    print_table(
        f"Env overhead: chunk_step of {args.chunk} steps, 1 env each, {args.repeats} interleaved pairs",
        [
            Row("chunk_step wall, reward model off", Stats.of(samples["off"]), "s"),
            Row("chunk_step wall, reward model on", Stats.of(samples["on"]), "s"),
            Row("wall on / off, per pair", wall, "x"),
            Row("chunk_step CPU, reward model off", Stats.of(samples["off_cpu"]), "s"),
            Row("chunk_step CPU, reward model on", Stats.of(samples["on_cpu"]), "s"),
            Row("CPU on / off, per pair", cpu, "x"),
            Row("frame cache time per chunk (on env)", Stats.of(samples["cache"]), "ms", 1e3),
            Row("frame cache time / chunk_step wall (on env)", share, "%", 100),
        ],
    )
    frames, nbytes = cache
    print(f"\nfirst reset (not compared): off {reset['off']:.1f} s, on {reset['on']:.1f} s")
    print(f"frame cache of the on env after the timed chunks: {frames} frames, {nbytes / 2**20:.1f} MiB")
    print()
    for name, stats in (("wall", wall), ("CPU", cpu)):
        print(
            verdict(
                f"chunk_step {name} on / off (median of pairs)",
                stats.median,
                f"<= {TARGET}",
                stats.median <= TARGET,
            )
        )
    print(
        verdict(
            "frame cache time / chunk_step", share.median, f"<= {TARGET - 1:.0%}", share.median <= TARGET - 1
        )
    )


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=32, add=_add_args)
    if args.chunk < 1:
        raise SystemExit(f"--chunk must be at least 1, got {args.chunk}.")
    # +1: interleave's warm-up pair also steps both envs.
    if (args.repeats + 1) * args.chunk >= MAX_EPISODE_STEPS:
        raise SystemExit(
            f"(--repeats + 1) * --chunk must stay below {MAX_EPISODE_STEPS} (no episode may end)."
        )
    header("Benchmark 3: env overhead of the reward model (chunk_step on vs off)")
    with tempfile.TemporaryDirectory(prefix="bench-env-overhead-") as tmp:
        run(args, Path(tmp))


if __name__ == "__main__":  # LIBERO's env processes are spawned: the guard is required
    main()
