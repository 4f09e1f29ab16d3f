"""A labelled frame set as the fine-tune's data (``reward-eval finetune --data DIR``, repeatable).

The set (:mod:`reward_eval.classifier.labelled_set`, the one ``train-classifier`` reads) is
simulator-labelled LIBERO episodes, each as the env's client would send it to a judge: its
``served`` MP4. Each becomes one :class:`SetEpisode`, labelled by its native success, whose
examples are made as a run's kept episodes' are
(:func:`~reward_eval.finetune.dataset.episode_examples`: the MP4's own bytes, its re-encode,
the counterfactuals of a success).

**The split is the set's.** ``train`` trains; ``held_out`` measures every fine-tune (the judge
beside its base, what a search chooses by); ``test`` is scored and reported apart, never used to
choose. The set keeps every initial state on one side, and its reserved states (the main job's,
the server's self-test's) are never trained on. The frames played on after a success (``after``)
are not episodes a judge is sent, so they make no example.

``wrong_task`` judges a success against another task of the set's suite, as the audit picks it
(:func:`reward_eval.analysis.hard_negatives.hard_negative`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reward_eval.classifier.labelled_set import LabelledSet, check_split, load_set
from reward_eval.finetune.dataset import TRAIN, DataError
from reward_eval.finetune.sources import DataSource


@dataclass(frozen=True)
class SetEpisode:
    """One episode of a labelled set (a :class:`~reward_eval.finetune.dataset.DataEpisode`); ``split``:
    the set's."""

    key: str
    group: str
    video: str
    task_id: int
    task_text: str
    native_success: bool
    seed_index: int
    split: str


def set_episodes(labelled: LabelledSet, prefix: str = "set", first_index: int = 0) -> list[SetEpisode]:
    """The set's episodes in manifest order, each keyed by its served MP4's name under ``prefix``,
    grouped by its initial state ``(task, trial)`` and numbered from ``first_index`` (the seed of
    its wrong instructions)."""
    return [
        SetEpisode(
            key=f"{prefix}/{Path(e.served.video).stem}",
            group=f"state:{e.task_id}:{e.trial_id}",
            video=str(labelled.path(e.served)),
            task_id=e.task_id,
            task_text=e.task_text,
            native_success=e.native_success,
            seed_index=first_index + i,
            split=e.split,
        )
        for i, e in enumerate(labelled.episodes)
    ]


def read_set(root: Path) -> LabelledSet:
    """The labelled set in ``root``; :class:`~reward_eval.finetune.dataset.DataError` in one sentence
    if it is not one."""
    try:
        return load_set(root)
    except ValueError as exc:
        raise DataError(f"--data: {exc}") from None


def set_splits(episodes: Sequence[SetEpisode]) -> dict[str, str]:
    """group -> split for every group that does not train (what
    :func:`~reward_eval.finetune.dataset.build_examples` takes)."""
    return {e.group: e.split for e in episodes if e.split != TRAIN}


def suite_hard_negatives(labelled: LabelledSet) -> Callable[[Any], str | None]:
    """``episode -> instruction`` for ``wrong_task``: another task of the set's suite (its settings'
    ``suite``, libero_10 when unrecorded), of the same scene where there is one."""
    from reward_eval.analysis.hard_negatives import hard_negative
    from reward_eval.job.audit_run import libero_suite_tasks

    @functools.cache
    def tasks() -> Mapping[int, Any]:  # LIBERO's suite is read only when wrong_task asks for it
        return libero_suite_tasks(str(labelled.settings.get("suite") or "libero_10"))

    return lambda e: hard_negative(int(e.task_id), tasks())


def set_summary(labelled: LabelledSet, episodes: Sequence[SetEpisode]) -> Mapping[str, Any]:
    """The summary's record of where the data came from: the set's directory, settings and split sizes."""
    counts = {split: sum(e.split == split for e in episodes) for split in sorted({e.split for e in episodes})}
    return {"dir": str(labelled.root), "settings": dict(labelled.settings), "episodes_by_split": counts}


def labelled_source(roots: Sequence[Path]) -> DataSource:
    """The fine-tune's data from the labelled sets in ``roots`` (``finetune --data``, repeatable):
    the first set's keys are ``set/<video>``, the n-th's ``set<n>/<video>``. A
    :class:`~reward_eval.finetune.dataset.DataError` if the sets record different suites or put an
    initial state on different splits."""
    sets = [read_set(root) for root in roots]
    per_set: list[list[SetEpisode]] = []
    for n, labelled in enumerate(sets):
        per_set.append(set_episodes(labelled, f"set{n or ''}", sum(map(len, per_set))))
    episodes = [e for mine in per_set for e in mine]
    suites = {str(labelled.settings.get("suite") or "") for labelled in sets}
    if len(suites) > 1:
        named = ", ".join(sorted(suites))
        raise DataError(f"--data: the sets record different suites ({named}); give sets of one.")
    try:
        check_split([e for labelled in sets for e in labelled.episodes])
    except ValueError as exc:
        raise DataError(f"--data: {exc}") from None
    records = [set_summary(labelled, mine) for labelled, mine in zip(sets, per_set, strict=True)]
    record = records[0] if len(records) == 1 else {"sets": records}
    return DataSource(episodes, set_splits(episodes), suite_hard_negatives(sets[0]), suites.pop(), record)
