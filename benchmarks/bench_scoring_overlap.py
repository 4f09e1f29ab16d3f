"""Benchmark 8: what a judge of latency L adds to ``chunk_step`` when scoring overlaps the chunk.

Per repetition, side by side, timed ``chunk_step`` calls of 8 steps of the project's
LiberoEnv (``--num-envs`` envs, idle actions) in which every env's episode ends at the
chunk's first step. Episodes are 17 steps long: after each (untimed) reset, two untimed
chunks, then the timed one, so each episode sends 16 of its 18 frames, as in training.
Contenders, each timed back to back with an ``off`` chunk (reward model disabled, the
reference) in the same repetition, order alternating:

* ``overlapped``: the reward model on, against a real server process whose ``async_tokens``
  test backend answers each request ``L`` after it arrives, requests running concurrently
  as in an engine with continuous batching (10 "tokens" of ``L / 10`` each; L = 0.5 s and
  2 s); the request leaves at the end step while the chunk's other 7 steps run;
* ``started at the chunk end``: the same env with each request started only when the chunk
  collects it (the client's ``submit`` replaced by one that waits for ``result()`` and then
  scores the chunk's episodes concurrently): how every request started before this change.

One env object per setting (off, on); the "on" env switches judges with ``set_reward_model``.
Resets reuse each env's reset state ids (no simulator rebuilt; eval-mode env, log off).

Target per repetition: ``overlapped - off <= max(0, L - rest) + 5% of off``, where ``rest``
is the chunk's other 7 steps, taken as 7/8 of ``off`` of the same repetition. The table
shows ``excess = (overlapped - off - max(0, L - rest)) / off``; the verdict is on its median.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_scoring_overlap.py [--repeats 8] [--num-envs 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    ENV_CONFIG,
    RewardServer,
    Row,
    Stats,
    header,
    idle_actions,
    interleave,
    parse_args,
    print_table,
    ratios,
    verdict,
)

CHUNK = 8
EPISODE = 2 * CHUNK + 1  # ends at the first step of the third chunk
LATENCIES = (0.5, 2.0)
TOLERANCE = 0.05


def _add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--num-envs", type=int, default=2, help="envs per LiberoEnv (default %(default)s)")


@contextmanager
def _env(num_envs: int, reward_model: dict[str, Any] | None) -> Iterator[Any]:
    """An eval-mode LiberoEnv (resets to the same states rebuild nothing), closed after."""
    from reward_eval.job.env_config import load_env_config
    from rlinf.envs import get_env_cls

    cfg = load_env_config(ENV_CONFIG)
    cfg.max_episode_steps, cfg.is_eval, cfg.auto_reset = EPISODE, True, False
    for key, value in (reward_model or {}).items():
        cfg.reward_model[key] = value
    env = get_env_cls("libero")(
        cfg, num_envs=num_envs, seed_offset=0, total_num_processes=1, worker_info=None
    )
    try:
        env.reset()  # the first reset picks RLinf's eval states; later ones reuse them
        yield env
    finally:
        env.close()
        env.env.close()


class _AtEnd:
    """``submit`` that starts nothing: the first ``result()`` scores all queued episodes at once."""

    def __init__(self, client: Any) -> None:
        self.client, self.queue = client, []

    def submit(self, episode: Any) -> _Deferred:
        deferred = _Deferred(self, episode)
        self.queue.append(deferred)
        return deferred

    def run(self) -> None:
        batch, self.queue = self.queue, []
        for deferred, result in zip(batch, self.client.score_many([d.episode for d in batch]), strict=True):
            deferred.value = result


class _Deferred:
    def __init__(self, owner: _AtEnd, episode: Any) -> None:
        self.owner, self.episode, self.value = owner, episode, None

    def result(self) -> Any:
        if self.value is None:
            self.owner.run()
        return self.value


def _prepare(env: Any, setup: Callable[[], None]) -> None:
    """Settings, reset, and the 2 untimed chunks before the one whose first step ends the episodes."""
    setup()
    env.reset(reset_state_ids=env.reset_state_ids.copy())
    for _ in range(2):
        env.chunk_step(idle_actions(env.num_envs, CHUNK))


def _timed_chunk(env: Any) -> float:
    """Seconds of the chunk whose first step ends every episode (checked, with no fallback)."""
    actions = idle_actions(env.num_envs, CHUNK)
    start = time.perf_counter()
    _, _, _, truncations, infos = env.chunk_step(actions)
    seconds = time.perf_counter() - start
    if not bool(truncations[:, 0].all()):
        raise RuntimeError("the episodes must end at the timed chunk's first step")
    if "vlm_fallback" in infos[-1]["episode"] and infos[-1]["episode"]["vlm_fallback"].any():
        raise RuntimeError("a scoring call failed: the benchmark would time a fallback")
    return seconds


class Pairs:
    """Each sample: an ``off`` chunk and a contender's chunk timed back to back, order alternating.

    Both envs are prepared first, so the two timed chunks are seconds apart: the machine's
    load drifts less between them than between contenders a minute apart.
    """

    def __init__(self, off: Any, on: Any) -> None:
        self.off, self.on, self.turn = off, on, 0

    def measure(self, name: str, setup: Callable[[], None]) -> Callable[[], tuple[float, float]]:
        def run() -> tuple[float, float]:
            _prepare(self.off, lambda: None)
            _prepare(self.on, setup)
            self.turn += 1
            if self.turn % 2:
                off = _timed_chunk(self.off)
                on = _timed_chunk(self.on)
            else:
                on = _timed_chunk(self.on)
                off = _timed_chunk(self.off)
            print(f"  {name}: {on:.3f} s, off {off:.3f} s", file=sys.stderr, flush=True)
            return off, on

        return run


def run(args: argparse.Namespace, tmp: Path) -> dict[str, list[tuple[float, float]]]:
    """(off, contender) seconds per repetition, by contender."""
    with ExitStack() as stack:
        servers = {}
        for latency in LATENCIES:
            # A judge of latency L per request, whatever arrives meanwhile. (A batch-at-a-time
            # backend would serialize two episodes whose MP4s reach it a few ms apart: 2L.)
            kwargs = json.dumps({"log_path": str(tmp / f"jobs-{latency}.log"), "token_seconds": latency / 10})
            args_ = ["--backend", "async_tokens", "--model", "m", "--video-root", str(tmp)]
            server = RewardServer([*args_, "--backend-kwargs", kwargs], tmp / f"server-{latency}.log")
            servers[latency] = stack.enter_context(server)
        block = {"enable": True, "backend": "async_tokens", "temp_video_dir": str(tmp), "timeout": 30.0}
        off = stack.enter_context(_env(args.num_envs, None))
        on = stack.enter_context(_env(args.num_envs, {**block, "endpoint": servers[LATENCIES[0]].endpoint}))

        def judge(latency: float, at_end: bool) -> Callable[[], None]:
            def setup() -> None:
                on.set_reward_model(on.reward_model.replace(endpoint=servers[latency].endpoint))
                if at_end:
                    on.reward_client.submit = _AtEnd(on.reward_client).submit  # the old timing

            return setup

        pairs = Pairs(off, on)
        measures = {}
        for latency in LATENCIES:
            for at_end in (False, True):
                name = _name(latency, at_end)
                measures[name] = pairs.measure(name, judge(latency, at_end))
        return interleave(measures, repeats=args.repeats)


def _name(latency: float, at_end: bool) -> str:
    return f"L={latency} s, {'started at the chunk end' if at_end else 'overlapped'}"


def _excess(overlap: Sequence[float], off: Sequence[float], latency: float) -> list[float]:
    """Per repetition: (overlap - off - max(0, L - rest)) / off, rest = 7/8 of off."""
    return [
        (o - f - max(0.0, latency - f * (CHUNK - 1) / CHUNK)) / f for o, f in zip(overlap, off, strict=True)
    ]


def report(samples: dict[str, list[tuple[float, float]]], args: argparse.Namespace) -> list[str]:
    rows, lines = [], []
    for latency in LATENCIES:
        pairs = {at_end: samples[_name(latency, at_end)] for at_end in (False, True)}
        off = [o for o, _ in pairs[False]]
        overlap, at_end = [c for _, c in pairs[False]], [c for _, c in pairs[True]]
        off_at_end = [o for o, _ in pairs[True]]
        excess = _excess(overlap, off, latency)
        rows += [
            Row(f"L={latency} s: off (reward model disabled)", Stats.of(off), "s"),
            Row(f"L={latency} s: overlapped", Stats.of(overlap), "s"),
            Row(f"L={latency} s: overlapped - off", Stats.of([c - o for o, c in pairs[False]]), "s"),
            Row(f"L={latency} s: overlapped / off", Stats.of(ratios(overlap, off)), "x"),
            Row(
                f"L={latency} s: started at the chunk end - off",
                Stats.of([c - o for o, c in pairs[True]]),
                "s",
            ),
            Row(f"L={latency} s: started at the chunk end / off", Stats.of(ratios(at_end, off_at_end)), "x"),
            Row(f"L={latency} s: excess over max(0, L - rest)", Stats.of(excess), "% of off", 100),
        ]
        median = Stats.of(excess).median
        target = f"<= {TOLERANCE:.0%} of off"
        lines.append(verdict(f"L={latency} s excess (median)", median, target, median <= TOLERANCE))
    print_table(
        f"chunk_step of {CHUNK} steps, {args.num_envs} env(s), episodes ending at its first step, "
        f"{args.repeats} interleaved repetitions (each: off and the contender back to back)",
        rows,
    )
    print()
    for line in lines:
        print(line)
    return lines


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=8, add=_add_args)
    if args.num_envs < 1:
        raise SystemExit(f"--num-envs must be >= 1, got {args.num_envs}.")
    header("Benchmark 8: scoring overlapped with the chunk")
    with tempfile.TemporaryDirectory(prefix="bench-overlap-") as tmp:
        samples = run(args, Path(tmp))
    report(samples, args)


if __name__ == "__main__":  # LIBERO's env processes are spawned: the guard is required
    main()
