"""What the learning comparison writes: ``learning.json``, the time split and the summary lines.

Everything is read from each run's logged scalars (``reward_eval.analysis.training_runs.read_scalars``)
and its ``finished.json`` (written by :mod:`.cli` when the run ended); the step records themselves
are :func:`reward_eval.analysis.learning.learning_steps`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reward_eval.analysis.learning import Scalars, first_step_at, guard_tripped_at, learning_steps, rise
from rlinf.envs.libero.reward_term import JUDGE_SECONDS

RESET_TAG = "time/env/env/bootstrap_step"
ROLLOUT_TAG = "time/env/env_interact_step"
UPDATE_TAGS = ("time/actor/run_training", "time/actor/actor/compute_adv")
STEP_TAG = "time/step"
JUDGE_TAG = f"env/{JUDGE_SECONDS}"
FIRST, LAST = 2, 3  # the steps pooled for the rise: the first two against the last three
MILESTONE = 0.5  # "how fast": the first step at which the simulator's success reaches it


def _total(scalars: Scalars, tag: str) -> float:
    return float(sum(scalars.get(tag, {}).values()))


def time_split(scalars: Scalars, wall_s: float) -> dict[str, float]:
    """Seconds of a run by where they went: start-up, resets, rollout, judging, actor update.

    Judging is the env's own count (rendering the judge's frames and waiting for scores, the
    last step's cumulative ``vlm_judge_seconds``); it happens inside the rollout's chunk steps,
    so the rollout's share is the env's chunk time without it. Start-up is the wall time outside
    the training steps (Ray, workers, simulators, the first reset's build).
    """
    judge = scalars.get(JUDGE_TAG, {})
    judging = float(judge[max(judge)]) if judge else 0.0
    return {
        "start_up": round(max(0.0, wall_s - _total(scalars, STEP_TAG)), 1),
        "resets": round(_total(scalars, RESET_TAG), 1),
        "rollout": round(max(0.0, _total(scalars, ROLLOUT_TAG) - judging), 1),
        "judging": round(judging, 1),
        "actor_update": round(sum(_total(scalars, tag) for tag in UPDATE_TAGS), 1),
        "wall": round(wall_s, 1),
    }


def run_record(scalars: Scalars, finished: Mapping[str, Any]) -> dict[str, Any]:
    """One run of ``learning.json``: its reward settings, its steps, the guard, the time split."""
    return {
        "reward_model": finished["reward_model"],
        "status": finished["status"],
        "log_dir": finished["log_dir"],
        "guard_tripped_at": guard_tripped_at(scalars),
        "time_s": time_split(scalars, float(finished["wall_s"])),
        "steps": learning_steps(scalars),
    }


def write_learning(out: Path, runs: Mapping[str, Mapping[str, Any]], settings: Mapping[str, Any]) -> Path:
    """``out/learning.json``: ``{"settings": ..., "runs": {name: run_record}}``."""
    path = out / "learning.json"
    path.write_text(json.dumps({"settings": dict(settings), "runs": dict(runs)}, indent=1) + "\n")
    return path


def summary_lines(runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per run: success first-vs-last with the test's p-value, judged success, the judge's
    false-positive rate, the share of groups with a gradient, the guard, the time."""
    lines = []
    for name, run in runs.items():
        steps = run["steps"]
        reached = first_step_at(steps, MILESTONE)
        when = f"at step {reached}" if reached is not None else "not reached"
        lines.append(
            f"{name}: {_rise_text(steps)}; success >= {MILESTONE:g} {when}; {_judge_text(steps)}; "
            f"{_time_text(run['time_s'])}"
        )
        if run["guard_tripped_at"] is not None:
            lines[-1] += f"; guard tripped at step {run['guard_tripped_at']}"
    return lines


def _rise_text(steps: Sequence[Mapping[str, Any]]) -> str:
    if len(steps) < FIRST + LAST:
        rates = ", ".join(f"{s['success_rate']:.2f}" for s in steps)
        return f"success per step {rates} (too few steps for the first-{FIRST}-vs-last-{LAST} test)"
    r = rise(steps, "success_rate", FIRST, LAST)
    return (
        f"success {r.before:.2f} (first {FIRST} steps, {r.episodes_before} episodes) -> {r.after:.2f} "
        f"(last {LAST}, {r.episodes_after}): {r.rise:+.2f}, p = {r.p_value:.3g}"
    )


def _judge_text(steps: Sequence[Mapping[str, Any]]) -> str:
    groups = [s["groups_with_gradient"] for s in steps if s["groups_with_gradient"] is not None]
    text = (
        f"groups with a gradient {sum(groups) / len(groups):.2f}" if groups else "groups with a gradient n/a"
    )
    judged = [s for s in steps if s["judged_success_rate"] is not None]
    if not judged:
        return text
    mean = sum(s["judged_success_rate"] for s in judged) / len(judged)
    fprs = [s["false_positive_rate"] for s in judged if s["false_positive_rate"] is not None]
    fpr = f"{sum(fprs) / len(fprs):.2f}" if fprs else "n/a"
    return f"{text}; judged success {mean:.2f}, judge false-positive rate {fpr} (means over steps)"


def _time_text(split: Mapping[str, float]) -> str:
    parts = ("start_up", "resets", "rollout", "judging", "actor_update")
    return (
        f"{split['wall']:.0f} s (" + ", ".join(f"{p.replace('_', ' ')} {split[p]:.0f}" for p in parts) + ")"
    )
