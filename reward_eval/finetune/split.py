"""Which episodes train the judge and which measure it, and how much each class weighs: pure.

**The split is by initial state, never by frame.** An episode and its counterfactuals share
every pixel that matters, and two episodes from the same initial state (one run's expert
success, another run's failure) share the scene; a judge measured on a state it was trained
on is measured on what it memorised. So the unit of the split is the *group*: the episode's
``reset_state_id`` (RLinf numbers initial states across the whole suite, so the id alone names
one), or the episode itself when its record carries none. A group goes entirely to one side,
with every counterfactual built from its episodes.

The held-out groups are every group of a ``--holdout-tasks`` task, plus a seeded
``holdout_fraction`` of the other groups, drawn apart among the groups that hold a native
success and those that do not (stratified: each side keeps both kinds where there are at
least two of a kind), so a small data set does not put every success on one side by chance.

**Class weights** balance the loss: each class weighs ``n / (2 * n_class)``, so both classes
contribute half of it however many negatives the counterfactuals add, and a judge that answers
the same for every video stands at ``ln 2`` (see :mod:`.readout`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# The splits, as a labelled set's manifest names them: train trains; held_out measures every fine-tune
# (the judge beside its base) and is what a run's split holds out; test, a labelled set's only, is
# reported apart and chooses nothing.
TRAIN, HELD_OUT, TEST = SPLITS = ("train", "held_out", "test")


@dataclass(frozen=True)
class GroupInfo:
    """What the split needs of one group: its key, task id and whether it holds a native success."""

    key: str
    task_id: Any
    has_success: bool


def group_key(reset_state_id: int | None, episode_key: str) -> str:
    """The split unit of an episode: ``state:<id>``, or ``episode:<key>`` for a record without one."""
    return f"state:{reset_state_id}" if reset_state_id is not None else f"episode:{episode_key}"


def held_out_count(groups: int, fraction: float) -> int:
    """How many of ``groups`` groups to hold out: ``fraction`` of them rounded half up, at least one
    when the fraction is positive and there are two or more (one group is never all held out)."""
    if groups < 2 or fraction <= 0:
        return 0
    return min(groups - 1, max(1, math.floor(groups * fraction + 0.5)))


def choose_held_out(
    groups: Sequence[GroupInfo], fraction: float, holdout_tasks: Collection[Any], seed: int
) -> set[str]:
    """The keys of the held-out groups (see the module docstring); deterministic in ``seed``.

    ``holdout_tasks`` are compared as strings with each group's task id, as the command line
    gives them.
    """
    tasks = {str(t) for t in holdout_tasks}
    held = {g.key for g in groups if str(g.task_id) in tasks}
    rest = sorted((g for g in groups if g.key not in held), key=lambda g: g.key)
    rng = np.random.default_rng(seed)
    for kind in (True, False):  # successes first, so the draw of one kind never shifts the other's
        pool = [g.key for g in rest if g.has_success is kind]
        order = rng.permutation(len(pool))
        held |= {pool[i] for i in order[: held_out_count(len(pool), fraction)]}
    return held


def class_weights(labels: Iterable[bool]) -> dict[bool, float]:
    """``{True: w, False: w}`` with ``w_c = n / (2 * n_c)``; ``ValueError`` unless both classes occur."""
    counts = Counter(bool(label) for label in labels)
    if counts[True] == 0 or counts[False] == 0:
        raise ValueError(
            f"class weights need both classes, got {counts[True]} positive and {counts[False]} negative."
        )
    n = counts[True] + counts[False]
    return {kind: n / (2 * counts[kind]) for kind in (True, False)}


def counts_by(items: Iterable[Mapping[str, Any]], *keys: str) -> dict[str, int]:
    """How many ``items`` have each value of ``keys`` (joined by ``/``), sorted by that value."""
    counted = Counter("/".join(str(item[key]) for key in keys) for item in items)
    return dict(sorted(counted.items()))
