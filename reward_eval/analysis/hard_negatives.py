"""Which other instruction a success is judged against in the audit's ``wrong_task`` episodes.

The hardest wrong instruction is one whose scene is the same and whose objects differ: in
libero_10, "put both the alphabet soup and the tomato sauce in the basket" and "put both the
cream cheese box and the butter in the basket" (tasks 0 and 1) share LIVING_ROOM_SCENE2, so
only the objects tell them apart. A judge that scores both alike ignores the instruction.

LIBERO names a task ``<SCENE>_<instruction words>`` (``LIVING_ROOM_SCENE2_put_both_...``);
the scene is the prefix up to ``SCENE<n>``. Pure functions; the suite is read by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_SCENE = re.compile(r"^(.*?SCENE\d+)_")


@dataclass(frozen=True)
class SuiteTask:
    """One task of a suite: its id, its scene (``""`` when unknown) and its instruction."""

    task_id: int
    scene: str
    instruction: str


def scene_of(task_name: str) -> str:
    """The scene prefix of a LIBERO task name (``KITCHEN_SCENE3``), ``""`` when it has none."""
    match = _SCENE.match(task_name)
    return match.group(1) if match else ""


def hard_negative(task_id: int, tasks: Mapping[int, SuiteTask]) -> str | None:
    """The instruction of another task to judge ``task_id``'s successes against, or ``None``.

    Candidates are the tasks with another instruction; those of the same (known) scene come
    first, then the nearest task id, the lower one on a tie, so the choice is deterministic.
    """
    own = tasks.get(task_id)
    own_text = own.instruction if own else None
    own_scene = own.scene if own else ""
    others = [t for t in tasks.values() if t.task_id != task_id and t.instruction != own_text]
    if not others:
        return None

    def rank(t: SuiteTask) -> tuple[bool, int, int]:
        return (not (own_scene and t.scene == own_scene), abs(t.task_id - task_id), t.task_id)

    return min(others, key=rank).instruction
