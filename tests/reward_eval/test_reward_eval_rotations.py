"""The expert's rotation helpers, against known rotations and each other."""

from __future__ import annotations

import numpy as np
import pytest

from reward_eval.policies.pick_place import DOWN
from reward_eval.policies.rotations import (
    matrix_to_rotvec,
    quat_to_matrix,
    rotvec_to_matrix,
    yaw_rotation,
)


@pytest.mark.parametrize(
    "rotvec",
    [np.zeros(3), np.array([0.0, 0.0, 0.3]), np.array([0.2, -0.4, 1.0]), np.array([3.0, 0.0, 0.0])],
    ids=["identity", "yaw", "general", "near-half-turn"],
)
def test_rotvec_round_trips(rotvec: np.ndarray) -> None:
    r = rotvec_to_matrix(rotvec)
    assert np.allclose(r @ r.T, np.eye(3)) and np.isclose(np.linalg.det(r), 1.0)
    assert np.allclose(matrix_to_rotvec(r), rotvec, atol=1e-9)


@pytest.mark.parametrize(
    ("quat", "expected"),
    [
        ([0, 0, 0, 1], np.eye(3)),
        ([1, 0, 0, 0], DOWN),  # robosuite x-y-z-w: the LIBERO reset pose
        ([0, 0, np.sin(0.25), np.cos(0.25)], yaw_rotation(0.5)),
    ],
    ids=["identity", "down", "yaw"],
)
def test_quaternions_are_x_y_z_w(quat: list[float], expected: np.ndarray) -> None:
    assert np.allclose(quat_to_matrix(quat), expected)
