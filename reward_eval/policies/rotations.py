"""Rotation helpers for the scripted expert, in robosuite's conventions (quaternions x-y-z-w).

numpy only: the expert runs in the job's process, which need not import scipy or torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def quat_to_matrix(quat: Sequence[float]) -> np.ndarray:
    """Rotation matrix of a robosuite quaternion (x, y, z, w)."""
    x, y, z, w = np.asarray(quat, float) / np.linalg.norm(quat)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def yaw_rotation(yaw: float) -> np.ndarray:
    """Rotation by ``yaw`` about the world z axis."""
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rotvec_to_matrix(rotvec: np.ndarray) -> np.ndarray:
    """Rodrigues' formula: the rotation of ``|rotvec|`` radians about ``rotvec``."""
    angle = float(np.linalg.norm(rotvec))
    if angle < 1e-9:
        return np.eye(3)
    k = np.asarray(rotvec) / angle
    cross = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle) * cross + (1 - np.cos(angle)) * cross @ cross


def matrix_to_rotvec(r: np.ndarray) -> np.ndarray:
    """Axis-angle vector of a rotation matrix (angle below pi, as the errors here are)."""
    angle = float(np.arccos(np.clip((np.trace(r) - 1.0) / 2.0, -1.0, 1.0)))
    if angle < 1e-9:
        return np.zeros(3)
    axis = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]]) / (2 * np.sin(angle))
    return angle * axis
