"""Success rate of the scripted expert over LIBERO initial states (issue 8's target: >= 70%).

``python benchmarks/expert_success.py [--tasks 0,1,7] [--trials 0-49] [--workers 2]``

Plays one episode per (task, initial state) with the expert's controller and the same
reset as RLinf's ``LiberoEnv`` (:func:`reward_eval.libero_task.reset_to`), ``--chunk``
actions per observation, and counts the simulator's success within ``--max-steps``. Prints
the rate per task and per range of ten initial states, and the episodes by the share of goal
predicates that hold at their end (for the basket tasks 0, 0.5 or 1: objects placed of two),
and appends one JSON line per episode to ``--out`` (an existing file is resumed: episodes
already in it are not played again).

The episodes run in robosuite **without cameras**: rendering is ~90% of a LIBERO step on
this CPU (EGL software rendering, ~80 ms per camera) and does not touch the physics, so
the same actions give the same outcome ~10x faster. The tests and the evaluation job run
the expert through the project's rendered ``LiberoEnv``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: make the repo importable
    sys.path.insert(0, str(REPO))

from reward_eval.libero_task import goal_verdict, headless_env, init_states, reset_to, task_files  # noqa: E402
from reward_eval.policies.expert import EXPERT_DROP_PHASES, ExpertController  # noqa: E402
from vlm_reward.argtypes import positive_int  # noqa: E402


def trial_range(text: str) -> list[int]:
    """argparse type: ``0-49`` or ``0,3,7``."""
    try:
        if "-" in text:
            first, last = (int(x) for x in text.split("-"))
            return list(range(first, last + 1))
        return [int(x) for x in text.split(",")]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"expected a range like 0-49 or a list like 0,3,7, got {text!r}"
        ) from exc


def play(
    env: Any, init_state: np.ndarray, controller: ExpertController, chunk: int, max_steps: int
) -> int | None:
    """Steps to the simulator's success, or None if the episode was truncated."""
    obs = reset_to(env, init_state)
    steps = 0
    while steps < max_steps:
        for action in controller.act(obs, min(chunk, max_steps - steps)):
            obs, _, success, _ = env.step(action)  # LIBERO's done is its success check
            steps += 1
            if success:
                return steps
    return None


def run_task(args: dict[str, Any], task_id: int, trials: Sequence[int]) -> list[dict[str, Any]]:
    """Every trial of one task in one process (building the env costs seconds)."""
    bddl, language = task_files(args["suite"], task_id)
    env, states = headless_env(bddl), init_states(args["suite"], task_id)
    records = []
    for trial in trials:
        controller = ExpertController(language, seed=trial, **args["expert"])
        start = time.perf_counter()
        steps = play(env, states[trial], controller, args["chunk"], args["max_steps"])
        records.append(
            {
                "task": task_id,
                "trial": trial,
                "success": steps is not None,
                "goal_fraction": goal_verdict(env)[1],
                "steps": steps,
                "phase": controller.phase.value,
                "seconds": round(time.perf_counter() - start, 2),
                **setting_fields(args),
            }
        )
    env.close()
    return records


def setting_fields(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings an episode's outcome depends on besides its task and trial.

    Every record carries them, and a resumed ``--out`` only reuses the records that match.
    """
    keys = ("suite", "chunk", "max_steps")
    return {**{key: settings[key] for key in keys}, **settings["expert"]}


def jobs(
    tasks: Sequence[int], trials: Sequence[int], done: set[tuple[int, int]], per_job: int
) -> Iterator[tuple[int, list[int]]]:
    """(task, trials) batches of the episodes not yet in the output."""
    for task in tasks:
        todo = [t for t in trials if (task, t) not in done]
        for i in range(0, len(todo), per_job):
            yield task, todo[i : i + per_job]


def summarize(records: Sequence[dict[str, Any]]) -> str:
    """Success per task, overall and per range of ten initial states, as a Markdown table."""
    by_task: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_task[r["task"]].append(r)
    lines = [
        "| task | success | by initial states | median steps (successes) | goal fraction at the end |",
        "| --- | --- | --- | --- | --- |",
    ]
    for task, rs in sorted(by_task.items()):
        rs.sort(key=lambda r: r["trial"])
        wins = sum(r["success"] for r in rs)
        ranges = defaultdict(list)
        for r in rs:
            ranges[r["trial"] // 10].append(r["success"])
        by_range = ", ".join(f"{k * 10}-{k * 10 + 9}: {sum(v)}/{len(v)}" for k, v in sorted(ranges.items()))
        steps = [r["steps"] for r in rs if r["success"]]
        median = int(np.median(steps)) if steps else "n/a"
        ends = Counter("n/a" if r.get("goal_fraction") is None else f"{r['goal_fraction']:g}" for r in rs)
        by_end = ", ".join(f"{g}: {n}" for g, n in sorted(ends.items()))
        rate = f"{wins}/{len(rs)} ({100 * wins / len(rs):.0f}%)"
        lines.append(f"| {task} | {rate} | {by_range} | {median} | {by_end} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", default="libero_10")
    p.add_argument("--tasks", type=trial_range, default=[0, 1, 7], help="task ids (default 0,1,7)")
    p.add_argument(
        "--trials", type=trial_range, default=list(range(50)), help="initial states (default 0-49)"
    )
    p.add_argument(
        "--chunk", type=positive_int, default=8, help="actions per observation (default %(default)s)"
    )
    p.add_argument(
        "--max-steps", type=positive_int, default=512, help="episode limit (default: libero_10's 512)"
    )
    p.add_argument("--workers", type=positive_int, default=2, help="parallel processes (default %(default)s)")
    p.add_argument("--action-noise", type=float, default=0.0)
    p.add_argument("--drop", choices=EXPERT_DROP_PHASES, default=None)
    p.add_argument(
        "--place-noise", type=float, default=0.0, help="metres of jitter of each release point (expert)"
    )
    p.add_argument("--out", type=Path, default=REPO / "runs" / "expert_success.jsonl")
    args = p.parse_args(argv)
    expert = {"action_noise": args.action_noise, "drop": args.drop, "place_noise": args.place_noise}
    settings = {"suite": args.suite, "chunk": args.chunk, "max_steps": args.max_steps, "expert": expert}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    old = [json.loads(line) for line in args.out.read_text().splitlines()] if args.out.exists() else []
    same = setting_fields(settings).items()
    old = [r for r in old if all(r.get(k) == v for k, v in same)]
    done = {(r["task"], r["trial"]) for r in old}
    todo = list(jobs(args.tasks, args.trials, done, per_job=5))
    records = [r for r in old if r["task"] in args.tasks and r["trial"] in args.trials]
    start = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool, args.out.open("a") as out:
        futures = [pool.submit(run_task, settings, task, trials) for task, trials in todo]
        for future in as_completed(futures):
            for r in future.result():
                out.write(json.dumps(r) + "\n")
                records.append(r)
            out.flush()
            wins = sum(r["success"] for r in records)
            print(f"[{time.perf_counter() - start:6.0f} s] {wins}/{len(records)} successes", file=sys.stderr)
    print(summarize(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
