"""The comparison's statistics, named before its runs (docs/training/learning.md, "Statistics").

- **Primary endpoint**: the last ``LAST`` steps' simulator success, judged run minus native run,
  paired by seed and by (step, group), with a two-stage bootstrap interval (seeds, then a seed's
  paired groups; :func:`reward_eval.analysis.grouped_stats.paired_endpoint`). One per judged run.
- Beside it, per run: the rise from the first ``FIRST`` steps pooled to the last ``LAST``, with an
  interval that resamples GRPO groups (a group's 8 episodes share an initial state: one draw), and
  the share of the gap to 1 it closed; the judge's false-positive rate and recall pooled over
  episodes (not a mean of per-step rates), with group-resampled intervals; its fallbacks; the
  episodes' lengths (judge-only runs: all the horizon).

Everything comes from the runs' outcome records (``examples/embodiment/cpu_learn/outcomes.py``):
``steps[k][g]``, the episodes of group ``g`` at step ``k``. Pure: dicts in, dicts and text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reward_eval.analysis import grouped_stats as gs

FIRST, LAST = 2, 3  # the steps pooled for the rise: the first two against the last three
NATIVE = "native"  # the run every judged run is paired with
Steps = Sequence[Sequence[Sequence[Mapping[str, Any]]]]


def interval_json(interval: gs.Interval | None) -> dict[str, float] | None:
    """An interval as ``learning.json`` keeps it."""
    if interval is None:
        return None
    return {
        "estimate": interval.estimate,
        "low": interval.low,
        "high": interval.high,
        "level": interval.level,
    }


def _episodes(steps: Steps) -> list[Mapping[str, Any]]:
    return [episode for step in steps for group in step for episode in group]


def run_statistics(steps: Steps) -> dict[str, Any]:
    """One run's statistics: its rise (None with fewer than ``FIRST + LAST`` steps), the judge's pooled
    rates (None without a judge), fallbacks and episode lengths."""
    episodes = _episodes(steps)
    judged = any(episode["judged"] is not None for episode in episodes)
    out: dict[str, Any] = {"rise": None, "false_positive_rate": None, "recall": None}
    if len(steps) >= FIRST + LAST:
        r = gs.rise(steps, FIRST, LAST)
        out["rise"] = {
            "before": r.before,
            "after": r.after,
            "rise": interval_json(r.rise),
            "gap_closed": r.gap_closed,
            "first": FIRST,
            "last": LAST,
            "groups": [r.groups_before, r.groups_after],
        }
    if judged:
        for kind in gs.KINDS:
            out[kind] = interval_json(gs.pooled_rate(steps, kind))
    lengths = [int(episode["length"]) for episode in episodes]
    out["fallbacks"] = sum(bool(episode["fallback"]) for episode in episodes) if judged else None
    out["episode_length"] = {"min": min(lengths), "max": max(lengths)} if lengths else None
    out["episodes"] = len(episodes)
    return out


def endpoints(outcomes: Mapping[str, Mapping[int, Steps]]) -> dict[str, dict[str, Any]]:
    """The primary endpoint of each judged run: ``outcomes[run][seed]`` are its steps; every run is
    paired with :data:`NATIVE` over the seeds both have. Empty without a native run."""
    native = outcomes.get(NATIVE)
    found = {}
    for name, by_seed in outcomes.items():
        if name == NATIVE or native is None:
            continue
        seeds = sorted(set(by_seed) & set(native))
        if not seeds or any(len(by_seed[s]) < LAST or len(native[s]) < LAST for s in seeds):
            continue
        end = gs.paired_endpoint({s: by_seed[s] for s in seeds}, {s: native[s] for s in seeds}, LAST)
        found[name] = {
            "last": LAST,
            "seeds": seeds,
            "per_seed": {str(seed): value for seed, value in end.per_seed.items()},
            "difference": interval_json(end.difference),
        }
    return found


def interval_text(interval: Mapping[str, float] | None, signed: bool = False) -> str:
    """A ``learning.json`` interval as ``0.31 [0.12, 0.48]`` (``signed``: ``+0.31 [...]``), or ``n/a``."""
    return gs.interval_text(None if interval is None else gs.Interval(**interval), signed=signed)


def rise_text(rise: Mapping[str, Any] | None) -> str:
    """``0.25 -> 0.71, +0.46 [+0.21, +0.67], 61% of the gap`` (or why there is none)."""
    if rise is None:
        return f"n/a (fewer than {FIRST + LAST} steps)"
    gap = "" if rise["gap_closed"] is None else f", {rise['gap_closed']:.0%} of the gap"
    return f"{rise['before']:.2f} -> {rise['after']:.2f}, {interval_text(rise['rise'], signed=True)}{gap}"


COLUMNS = (
    "run",
    f"success, first {FIRST} -> last {LAST} (95% interval over groups)",
    f"last {LAST} minus native (primary)",
    "false-positive rate (pooled)",
    "recall (pooled)",
    "fallbacks",
    "episode length",
)


def table(stats: Mapping[str, Mapping[str, Any]], ends: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The statistics as a Markdown table, a row per run (``compare.md``'s and ``seeds.md``'s)."""
    rows = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    for name, s in stats.items():
        end = ends.get(name)
        lengths = s["episode_length"]
        cells = (
            name,
            rise_text(s["rise"]),
            "-" if end is None else interval_text(end["difference"], signed=True),
            interval_text(s["false_positive_rate"]),
            interval_text(s["recall"]),
            "-" if s["fallbacks"] is None else str(s["fallbacks"]),
            "-" if lengths is None else f"{lengths['min']}-{lengths['max']}",
        )
        rows.append("| " + " | ".join(cells) + " |")
    return rows
