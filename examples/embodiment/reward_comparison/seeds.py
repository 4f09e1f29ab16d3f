"""The comparison over seeds: ``python -m examples.embodiment.reward_comparison.seeds DIR... --out OUT``.

Each ``DIR`` is one ``compare_rewards.sh --out DIR --seed S`` (its ``learning.json``); they must
share everything but the seed (steps, start, mode, overrides). Writes ``OUT/seeds.json`` and
``OUT/seeds.md`` and prints a line per run:

- the primary endpoint of each judged run (:mod:`.statistics`): the last steps' success minus the
  native run's, paired by seed and by (step, group), its per-seed values and interval;
- per run, its statistics over every seed's groups pooled (the rise, the judge's false-positive
  rate and recall, fallbacks, lengths) and its rise at each seed.

Exit status 0, or 2 for comparisons that cannot be pooled (the message says why).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from examples.embodiment.reward_comparison import statistics
from vlm_reward.exit_statuses import EXIT_BAD_OPTIONS, EXIT_OK

SHARED = ("steps", "start", "judge_only", "overrides")  # settings every pooled comparison must share


def load(dirs: Sequence[Path]) -> tuple[dict[str, dict[int, Any]], dict[str, Any]]:
    """``outcomes[run][seed]`` from each ``DIR/learning.json`` and their shared settings; ValueError
    when they differ in more than the seed, a seed repeats, or a run recorded no outcomes."""
    outcomes: dict[str, dict[int, Any]] = {}
    shared: dict[str, Any] | None = None
    for directory in dirs:
        learning = json.loads((directory / "learning.json").read_text())
        settings = learning["settings"]
        mine = {key: settings.get(key) for key in SHARED}
        if shared is not None and mine != shared:
            raise ValueError(f"{directory} ran with {mine}, the others with {shared}: only seeds may differ.")
        shared, seed = mine, int(settings["seed"])
        for name, run in learning["runs"].items():
            if not run.get("outcomes"):
                raise ValueError(f"{directory}'s run {name!r} recorded no outcomes (made before they were).")
            if seed in outcomes.setdefault(name, {}):
                raise ValueError(f"seed {seed} comes twice (again in {directory}).")
            outcomes[name][seed] = run["outcomes"]
    return outcomes, shared or {}


def pooled(by_seed: Mapping[int, Any]) -> list:
    """One run's steps with every seed's groups side by side (step k: all seeds' groups of step k)."""
    steps = min(len(steps) for steps in by_seed.values())
    return [[group for seed in sorted(by_seed) for group in by_seed[seed][k]] for k in range(steps)]


def summarise(outcomes: Mapping[str, Mapping[int, Any]]) -> dict[str, Any]:
    """``seeds.json``'s content: the endpoints, and per run its pooled statistics and per-seed rises."""
    runs = {}
    for name, by_seed in outcomes.items():
        per_seed = {
            str(seed): statistics.run_statistics(steps)["rise"] for seed, steps in sorted(by_seed.items())
        }
        runs[name] = {
            "seeds": sorted(by_seed),
            "pooled": statistics.run_statistics(pooled(by_seed)),
            "rise_per_seed": per_seed,
        }
    return {"primary_endpoint": statistics.endpoints(outcomes), "runs": runs}


def lines(summary: Mapping[str, Any]) -> list[str]:
    """A line per run: its pooled rise, its rise per seed, the endpoint with its per-seed values."""
    out = []
    for name, run in summary["runs"].items():
        per_seed = "; ".join(f"seed {s}: {statistics.rise_text(r)}" for s, r in run["rise_per_seed"].items())
        seeds = ", ".join(map(str, run["seeds"]))
        text = f"{name} (seeds {seeds}): pooled {statistics.rise_text(run['pooled']['rise'])}"
        end = summary["primary_endpoint"].get(name)
        if end is not None:
            values = ", ".join(f"{v:+.2f}" for v in end["per_seed"].values())
            difference = statistics.interval_text(end["difference"], signed=True)
            text += f"; last {end['last']} minus native {difference} (per seed {values})"
        out.append(f"{text}; {per_seed}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.embodiment.reward_comparison.seeds")
    parser.add_argument(
        "dirs", nargs="+", type=Path, help="compare_rewards.sh --out directories, one per seed"
    )
    parser.add_argument("--out", type=Path, required=True, help="where seeds.json and seeds.md go")
    args = parser.parse_args(argv)
    try:
        outcomes, shared = load(args.dirs)
    except (OSError, ValueError, KeyError) as exc:
        print(f"[seeds] {exc}", file=sys.stderr)
        return EXIT_BAD_OPTIONS
    summary = {"settings": shared, **summarise(outcomes)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "seeds.json").write_text(json.dumps(summary, indent=1) + "\n")
    stats = {name: run["pooled"] for name, run in summary["runs"].items()}
    table = statistics.table(stats, summary["primary_endpoint"])
    (args.out / "seeds.md").write_text("\n".join([f"# Over seeds ({shared})", "", *table]) + "\n")
    for line in lines(summary):
        print(f"[seeds] {line}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
