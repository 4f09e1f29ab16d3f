"""Episodes a classifier judged on the initial states it was trained on: found in a run.

A frame classifier trained on a scene's frames has seen that scene: its score of an episode that
starts from one of its training states (``task``, ``trial``) is not a measurement on unseen data.
``bash scripts/run.sh --episodes-per-task 4`` (or ``--tasks 0,1,7``) plays such states for the
set-up classifier. ``train-classifier`` records a checkpoint's training states
(``classifier.json``'s ``trained_on``). :func:`trained_on_block` finds the episodes of a run judged
on them by a local ``resnet`` checkpoint: the run's summary then carries ``trained_on`` (the
episodes, their states, and the overall numbers without them), which the terminal table, the
side-by-side table and the report flag with the words "trained on"
(:mod:`reward_eval.report.trained_on`). A judge behind ``--endpoint`` is not known here, and a
checkpoint that does not record its states is not marked.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reward_eval.analysis.metrics import summarize
from reward_eval.job.settings import RunSettings
from vlm_reward.backends.resnet_checkpoint import CONFIG_FILE
from vlm_reward.client.episode_record import EpisodeRecord

BACKEND = "resnet"


def trained_states(checkpoint: str | Path) -> frozenset[tuple[int, int]] | None:
    """The ``(task, trial)`` states ``checkpoint`` was trained on (``classifier.json``'s
    ``trained_on``), or ``None`` when it does not say (not a checkpoint, or one written before
    ``train-classifier`` recorded them)."""
    try:
        config = json.loads((Path(checkpoint) / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(config, dict) or "trained_on" not in config:
        return None
    return frozenset((int(task), int(trial)) for task, trial in config["trained_on"])


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


def _state(record: EpisodeRecord) -> tuple[int, int] | None:
    if record.trial_id is None:
        return None
    try:
        return (int(record.task_id), int(record.trial_id))
    except (TypeError, ValueError):
        return None
