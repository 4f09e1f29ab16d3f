"""The two baselines: a robot that does nothing and one that flails at random.

Both ignore the observation, so every episode they play is a native failure; they are
the negatives a judge must reject and the cheapest policies for a smoke run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from reward_eval.policies.registry import (
    ACTION_DIM,
    GRIPPER_OPEN,
    Policy,
    register_policy,
)


@register_policy("zero")
class ZeroPolicy(Policy):
    """No arm motion, gripper held open: the robot stays where the reset left it.

    The baseline a judge must reject: nothing in the scene changes, so every episode is a
    native failure (unless a task starts solved, which no LIBERO task does).
    """

    def act(self, env: Any, obs: dict[str, Any], chunk: int) -> np.ndarray:
        actions = np.zeros((env.num_envs, chunk, ACTION_DIM), dtype=np.float32)
        actions[..., -1] = GRIPPER_OPEN
        return actions


@register_policy("random")
class RandomPolicy(Policy):
    """Uniform end-effector deltas in ``[-scale, scale]`` and a random gripper (open/closed).

    Seeded once, not per episode: a run is reproducible from ``--policy-seed`` while the
    episodes of a run still differ from each other.
    """

    def __init__(self, seed: int = 0, scale: float = 0.5) -> None:
        super().__init__(seed)
        if not 0.0 < scale <= 1.0:
            raise ValueError(f"random policy scale must be in (0, 1], got {scale}.")
        self.scale = scale
        self._rng = np.random.default_rng(seed)

    def act(self, env: Any, obs: dict[str, Any], chunk: int) -> np.ndarray:
        shape = (env.num_envs, chunk, ACTION_DIM)
        actions = self._rng.uniform(-self.scale, self.scale, size=shape).astype(np.float32)
        actions[..., -1] = self._rng.choice(np.array([-1.0, 1.0], dtype=np.float32), size=shape[:2])
        return actions
