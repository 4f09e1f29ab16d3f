"""What a pick-and-place plan is made of, and where the hand grasps an object.

The plan's data (:class:`PickPlace` steps with the :class:`Grasp` of each object and the
:class:`Container` it goes into; the LIBERO instances are in ``libero_plans.py``) and the
grasp geometry (:func:`grasp_pose`, :func:`grasp_yaw`), apart from the controller that runs
the plan (``pick_place.py``), so each is read and tested on its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reward_eval.policies.rotations import quat_to_matrix

HAND_HALF_LENGTH = 0.1  # the Panda hand, from its centre to its end along the finger axis
CLEAR = 0.06  # metres between the hand and a neighbouring object's centre that are enough


@dataclass(frozen=True)
class Grasp:
    """How to pick one kind of object from the top (LIBERO asset facts, measured in the sim).

    ``height``: end-effector height above the object's ``_pos`` at the grasp.
    ``hang``: how far the held object reaches below the end effector (carry clearance).
    ``align_yaw``: a box (align the fingers with its short side) or a can (any yaw).
    ``yaw_offset``: the object's yaw, from its quaternion, at which the default finger
    direction already spans the short side.
    ``slide`` / ``play``: how far the grasp point may move along a box's long side /
    across it (where the open fingers have room to spare); :func:`grasp_pose` picks the
    point that keeps the hand clear of the neighbouring objects.
    """

    height: float
    hang: float
    align_yaw: bool = False
    yaw_offset: float = 0.0
    slide: float = 0.0
    play: float = 0.0


@dataclass(frozen=True)
class Container:
    """A container's size: ``rim`` height above its ``_pos``, ``radius`` of its footprint."""

    rim: float
    radius: float


@dataclass(frozen=True)
class PickPlace:
    """Move ``obj`` (a raw-observation prefix like ``alphabet_soup_1``) into ``container``.

    ``offset`` (x, y) shifts the release point from the container's centre, so the
    objects of one plan land side by side instead of on top of each other.
    """

    obj: str
    grasp: Grasp
    container: str
    box: Container
    offset: tuple[float, float] = (0.0, 0.0)


def grasp_yaw(grasp: Grasp, quat: Sequence[float]) -> float:
    """The end-effector yaw that spans the object's short side, in ``[-pi/2, pi/2)``.

    A parallel gripper is symmetric under a half turn, so the yaw is taken modulo pi and
    the arm never turns more than a quarter turn.
    """
    if not grasp.align_yaw:
        return 0.0
    r = quat_to_matrix(quat)
    yaw = np.arctan2(r[1, 0], r[0, 0]) - grasp.yaw_offset
    return float((yaw + np.pi / 2) % np.pi - np.pi / 2)


def grasp_pose(step: PickPlace, raw_obs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, float]:
    """Where to grasp: the offset from the object's centre and the end-effector yaw.

    The Panda hand is ~20 cm long along its finger axis, so descending next to a tall
    object (a milk carton beside a cream cheese box) or the basket's rim can land the hand
    on it. The candidates are the centre and points up to ``slide`` along / ``play`` across
    a box; the chosen one keeps the hand segment farthest from the nearest other object
    (the container counted with its radius). Clearances beyond ``CLEAR`` are equally good,
    and ties keep the earlier candidate, so an uncluttered object is grasped at its centre.
    """
    yaw = grasp_yaw(step.grasp, raw_obs[f"{step.obj}_quat"])
    center = np.asarray(raw_obs[f"{step.obj}_pos"], float)[:2]
    others = [  # (x-y, radius): the container is wide, the other objects count as points
        (np.asarray(value, float)[:2], step.box.radius if key == f"{step.container}_pos" else 0.0)
        for key, value in raw_obs.items()
        if key.endswith("_pos")
        and "_to_" not in key
        and not key.startswith("robot")
        and key != f"{step.obj}_pos"
    ]
    g = step.grasp
    offsets = [
        a * g.slide * _along(yaw) + c * g.play * _along(yaw + np.pi / 2)
        for a in (0, -1, 1)
        for c in (0, -1, 1)
    ]

    hand = HAND_HALF_LENGTH * _along(yaw + np.pi / 2)  # the fingers close along the hand

    def clearance(offset: np.ndarray) -> float:
        ends = (center + offset - hand, center + offset + hand)
        return min([CLEAR, *(_segment_distance(o, *ends) - r for o, r in others)])

    return np.array([*max(offsets, key=clearance), 0.0]), yaw


def _along(yaw: float) -> np.ndarray:
    return np.array([np.cos(yaw), np.sin(yaw)])


def _segment_distance(point: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    t = np.clip(np.dot(point - a, b - a) / np.dot(b - a, b - a), 0.0, 1.0)
    return float(np.linalg.norm(point - (a + t * (b - a))))
