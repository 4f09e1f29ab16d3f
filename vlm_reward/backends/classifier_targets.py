"""What a frame classifier is trained to answer: the registry of training targets.

Every frame of a labelled set carries the simulator's verdict on its state: ``success`` (LIBERO's
``_check_success()``) and ``goal_fraction`` (the share of the goal's predicates that hold; for the
libero_10 basket tasks 0, 0.5 or 1: objects placed of two). A :class:`Target` turns that verdict
into the number the classifier learns, in [0, 1] (RLinf's binary cross-entropy takes soft targets),
and names what its probability then means. ``reward-eval train-classifier --target NAME`` trains
one, the checkpoint records it (``classifier.json``; a checkpoint without one was trained on
``success``), and the judge identity names it.

- ``success``: 1 where the goal holds, else 0 (the default; the classifier judges success);
- ``half_goal``: 1 where at least half of the goal's predicates hold: one object of two in the
  basket counts. A deliberately lenient judge, for measuring what a judge that says yes to a near
  miss does to training;
- ``goal_fraction``: the goal fraction itself, a graded target (RLinf's binary cross-entropy
  with the fraction as a soft target, not a regression head; ``benchmarks/bench_classifier.py
  --part target`` trains both side by side): a progress judge whose score of a state is its
  estimated progress.

Pure: no torch, no RLinf; the training command and the backend both read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_TARGET = "success"


@dataclass(frozen=True)
class Target:
    """One training target: its name, what it is in words, what the classifier's probability
    estimates (as the judge identity says it), and the label of a frame from the simulator's
    verdict ``(success, goal_fraction)``. ``graded``: labels other than 0 and 1 occur."""

    name: str
    description: str
    estimates: str
    label: Callable[[bool, float], float]
    graded: bool = False


def _success(success: bool, goal_fraction: float) -> float:
    return 1.0 if success else 0.0


def _half_goal(success: bool, goal_fraction: float) -> float:
    return 1.0 if goal_fraction >= 0.5 else 0.0


def _goal_fraction(success: bool, goal_fraction: float) -> float:
    return float(goal_fraction)


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("success", "1 where the goal holds (LIBERO's success), else 0", "P(success)", _success),
        Target(
            "half_goal",
            "1 where at least half of the goal's predicates hold (one object of two placed counts): "
            "a deliberately lenient judge",
            "P(half the goal)",
            _half_goal,
        ),
        Target(
            "goal_fraction",
            "the share of the goal's predicates that hold, as a soft target: a graded progress judge",
            "goal fraction",
            _goal_fraction,
            graded=True,
        ),
    )
}


def target_names() -> tuple[str, ...]:
    """The registered targets, the default first."""
    return tuple(TARGETS)


def get_target(name: str) -> Target:
    """The target called ``name``; ``ValueError`` naming the choices for another."""
    try:
        return TARGETS[name]
    except (KeyError, TypeError):
        raise ValueError(f"classifier target {name!r} is not one of {', '.join(TARGETS)}.") from None
