"""Episodes a classifier judges on the initial states it was trained on: found, and said.

A frame classifier trained on a scene's frames has seen that scene: its score of an episode that
starts from one of its training states (``task``, ``trial``) is not a measurement on unseen data.
``bash scripts/run.sh --episodes-per-task 4`` (or ``--tasks 0,1,7``) plays such states for the
set-up classifier (task 0 trial 3, task 1 trial 3, task 7 trials 0-1 are training states of the
shipped set). A checkpoint records its training states (``classifier.json``'s ``trained_on``,
written by ``train-classifier``); one without them names the labelled set it was trained on
(``data``), whose train split says the same. :func:`trained_on_block` finds the episodes of a run
dir judged on them by a local ``resnet`` checkpoint: the run's summary then carries
``trained_on`` (the episodes, their states, and the overall numbers without them), which the
terminal table, the side-by-side table and the report flag with the words "trained on". A judge
behind ``--endpoint`` is not known here and nothing is marked.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reward_eval.analysis.metrics import summarize
from reward_eval.job.settings import RunSettings
from reward_eval.report.table import num, pct
from vlm_reward.backends.resnet_checkpoint import CONFIG_FILE
from vlm_reward.client.episode_record import EpisodeRecord

BACKEND = "resnet"


def trained_states(checkpoint: str | Path) -> frozenset[tuple[int, int]] | None:
    """The ``(task, trial)`` states ``checkpoint`` was trained on (see the module docstring), or
    ``None`` when neither it nor its data says (not a checkpoint, its data gone)."""
    from reward_eval.classifier.labelled_set import load_set

    try:
        config = json.loads((Path(checkpoint) / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if "trained_on" in config:
        return frozenset((int(task), int(trial)) for task, trial in config["trained_on"])
    try:
        return frozenset(e.state for e in load_set(config["data"]).split("train"))
    except (KeyError, TypeError, ValueError):
        return None


def states_text(states: Sequence[tuple[int, int]]) -> str:
    """``task 7 trials 0, 1; task 0 trial 3``: states grouped by task, in task order."""
    tasks: dict[int, list[int]] = {}
    for task, trial in sorted(states):
        tasks.setdefault(task, []).append(trial)
    return "; ".join(
        f"task {t} trial{'s' if len(k) > 1 else ''} {', '.join(map(str, k))}" for t, k in tasks.items()
    )


def trained_on_block(records: Sequence[EpisodeRecord], settings: RunSettings) -> dict[str, Any] | None:
    """The summary's ``trained_on`` block, or ``None`` when no episode was judged on a training
    state of the run's classifier (or the judge is not a local ``resnet`` checkpoint):
    ``checkpoint``, ``episodes`` (their indices in the records), ``states`` (``[task, trial]``),
    ``per_task`` (``{task: count}``) and ``without`` (the summary's ``overall`` block of the other
    episodes, ``None`` when there are none)."""
    if settings.backend != BACKEND or not isinstance(settings.model, str):
        return None
    states = trained_states(settings.model)
    if not states:
        return None
    hits = [i for i, r in enumerate(records) if _state(r) in states]
    if not hits:
        return None
    rest = [r for i, r in enumerate(records) if i not in frozenset(hits)]
    per_task: dict[str, int] = {}
    for i in hits:
        per_task[str(records[i].task_id)] = per_task.get(str(records[i].task_id), 0) + 1
    return {
        "checkpoint": settings.model,
        "episodes": hits,
        "states": [list(s) for s in sorted({_state(records[i]) for i in hits})],
        "per_task": per_task,
        "without": summarize(rest)["overall"] if rest else None,
    }


def trained_on_line(block: dict[str, Any], total: int) -> str:
    """One sentence for the terminal and the report."""
    states = states_text([tuple(s) for s in block["states"]])
    without = block["without"]
    rest = (
        "every episode is one of them"
        if without is None
        else f"without them ({without['n_episodes']} episodes): AUROC {num(without['auroc'])}, "
        f"agreement {pct(without['agreement'])}"
    )
    return (
        f"trained on: {len(block['episodes'])} of {total} episodes start from initial states the "
        f"classifier was trained on ({states}), so their scores measure nothing unseen; {rest}."
    )


def _state(record: EpisodeRecord) -> tuple[int, int] | None:
    if record.trial_id is None:
        return None
    try:
        return (int(record.task_id), int(record.trial_id))
    except (TypeError, ValueError):
        return None
