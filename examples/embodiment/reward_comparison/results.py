"""What the learning comparison writes: ``learning.json``, the statistics in ``compare.md``, the time
split, the step line and the summary lines.

Everything is read from each run's logged scalars (``reward_eval.analysis.training_runs.read_scalars``),
its outcome records (``examples/embodiment/cpu_learn/outcomes.py``, in its log dir's ``cpu_learn``)
and its ``finished.json`` (written by :mod:`.cli` when the run ended); the step records themselves
are :func:`reward_eval.analysis.learning.learning_steps`, the statistics :mod:`.statistics`'.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from examples.embodiment.cpu_learn.outcomes import read_groups
from examples.embodiment.reward_comparison import statistics
from reward_eval.analysis.learning import (
    EPISODES_TAG,
    FALLBACK_TAG,
    GROUPS_TAG,
    JUDGED_TAG,
    SPREAD_TAG,
    SUCCESS_TAG,
    Scalars,
    first_step_at,
    guard_tripped_at,
    learning_steps,
)
from reward_eval.analysis.training_runs import read_scalars
from rlinf.envs.libero.reward_term import JUDGE_SECONDS

RESET_TAG = "time/env/env/bootstrap_step"
ROLLOUT_TAG = "time/env/env_interact_step"
UPDATE_TAGS = ("time/actor/run_training", "time/actor/actor/compute_adv")
STEP_TAG = "time/step"
JUDGE_TAG = f"env/{JUDGE_SECONDS}"
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


def run_record(scalars: Scalars, finished: Mapping[str, Any], outcomes: Any = ()) -> dict[str, Any]:
    """One run of ``learning.json``: its reward settings, its steps, the guard, the time split, its
    episodes' outcomes by step and group and their statistics (None for a run that recorded none)."""
    return {
        "reward_model": finished["reward_model"],
        "status": finished["status"],
        "log_dir": finished["log_dir"],
        "guard_tripped_at": guard_tripped_at(scalars),
        "time_s": time_split(scalars, float(finished["wall_s"])),
        "steps": learning_steps(scalars),
        "statistics": statistics.run_statistics(outcomes) if outcomes else None,
        "outcomes": [[list(group) for group in step] for step in outcomes],
    }


GRPO_BATCH = "grpo_batch_step{step}_rank*.pt"  # the actor's record of each step's batch (cpu_smoke/actor.py)


def with_loss_lengths(steps: list, record_dir: Path) -> list:
    """``steps`` (``read_groups``'s) with each episode's ``length`` the steps RLinf's loss counts for it
    (its loss mask from the batch's ``dones``: up to and including its end step), where the actor
    recorded the batch. The env's own count (``episode_len``) is the steps elapsed when the rollout
    ended, the horizon for every env of a ``--cpu-learn`` run, also for an episode its success ended."""
    import torch
    from rlinf.utils.metric_utils import compute_loss_mask

    for k, groups in enumerate(steps, start=1):
        paths = sorted(record_dir.glob(GRPO_BATCH.format(step=k)))
        if not paths:
            continue
        dones = torch.cat([torch.load(path)["dones"] for path in paths], dim=1)
        mask, _ = compute_loss_mask(dones)
        lengths = mask.sum(dim=(0, 2)).tolist()
        episodes = [episode for group in groups for episode in group]
        if len(lengths) != len(episodes):
            raise ValueError(
                f"step {k}: {len(lengths)} trajectories in the actor's batch, {len(episodes)} outcomes."
            )
        for episode, length in zip(episodes, lengths, strict=True):
            episode["length"] = int(length)
    return steps


def write_all(out: Path, finished: Mapping[str, Mapping[str, Any]], settings: Mapping[str, Any]) -> list[str]:
    """``out/learning.json`` and the statistics section of ``out/compare.md`` from each run's
    ``finished.json``; the summary lines."""
    records = {}
    for name, run in finished.items():
        log_dir = Path(run["log_dir"])
        steps = with_loss_lengths(read_groups(log_dir / "cpu_learn"), log_dir / "cpu_learn")
        records[name] = run_record(read_scalars(log_dir), run, steps)
    ends = statistics.endpoints(
        {name: {settings["seed"]: r["outcomes"]} for name, r in records.items() if r["outcomes"]}
    )
    learning = {"settings": dict(settings), "primary_endpoint": ends, "runs": records}
    (out / "learning.json").write_text(json.dumps(learning, indent=1) + "\n")
    stats = {name: r["statistics"] for name, r in records.items() if r["statistics"] is not None}
    section = ["", f'## Statistics (seed {settings["seed"]}; docs/training/learning.md, "Statistics")', ""]
    with open(out / "compare.md", "a") as md:
        md.write("\n".join([*section, *statistics.table(stats, ends)]) + "\n")
    return summary_lines(records, ends)


def summary_lines(runs: Mapping[str, Mapping[str, Any]], ends: Mapping[str, Any] | None = None) -> list[str]:
    """One line per run: its rise with its interval and the gap closed, the primary endpoint, the
    milestone, the judge's pooled rates and fallbacks, the groups trained on, the guard, the time."""
    lines = []
    for name, run in runs.items():
        steps, stats = run["steps"], run["statistics"] or {}
        reached = first_step_at(steps, MILESTONE)
        when = f"at step {reached}" if reached is not None else "not reached"
        end = (ends or {}).get(name)
        primary = ""
        if end is not None:
            primary = f"; last {end['last']} minus native "
            primary += statistics.interval_text(end["difference"], signed=True)
        lines.append(
            f"{name}: success {statistics.rise_text(stats.get('rise'))}{primary}; success >= {MILESTONE:g} "
            f"{when}; {_judge_text(steps, stats)}; {_time_text(run['time_s'])}"
        )
        if run["guard_tripped_at"] is not None:
            lines[-1] += f"; guard tripped at step {run['guard_tripped_at']}"
    return lines


def _judge_text(steps: Sequence[Mapping[str, Any]], stats: Mapping[str, Any]) -> str:
    groups = [s["groups_with_gradient"] for s in steps if s["groups_with_gradient"] is not None]
    text = f"groups trained on {sum(groups) / len(groups):.2f}" if groups else "groups trained on n/a"
    if stats.get("fallbacks") is None:
        return text
    fpr, recall = (statistics.interval_text(stats[kind]) for kind in ("false_positive_rate", "recall"))
    return (
        f"{text}; judge false-positive rate {fpr}, recall {recall} (pooled over episodes), "
        f"fallbacks {stats['fallbacks']}"
    )


def _time_text(split: Mapping[str, float]) -> str:
    parts = ("start_up", "resets", "rollout", "judging", "actor_update")
    return (
        f"{split['wall']:.0f} s (" + ", ".join(f"{p.replace('_', ' ')} {split[p]:.0f}" for p in parts) + ")"
    )


def step_line(scalars: Scalars, step: int) -> str:
    """The comparison's line for TensorBoard step ``step`` of a run while it trains: the simulator's
    success, the judge's and its fallbacks (a judged run's, also when none), the groups trained on."""
    episodes = scalars.get(EPISODES_TAG, {}).get(step, 0)
    parts = [f"success {scalars[SUCCESS_TAG][step]:.2f} of {episodes:.0f}"]
    if step in scalars.get(JUDGED_TAG, {}):
        parts.append(f"judged {scalars[JUDGED_TAG][step]:.2f}")
    if step in scalars.get(FALLBACK_TAG, {}):  # a judged run: its fallbacks, also when none
        parts.append(f"fallbacks {round(scalars[FALLBACK_TAG][step] * episodes)}")
    if step in scalars.get(GROUPS_TAG, {}):
        parts.append(f"groups trained on {scalars[GROUPS_TAG][step]:.2f}")
    if step in scalars.get(SPREAD_TAG, {}):
        parts.append(f"with a spread {scalars[SPREAD_TAG][step]:.2f}")
    return ", ".join(parts)
