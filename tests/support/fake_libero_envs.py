"""Stand-ins for LIBERO envs that a spawned process can build (module-level: spawn pickles them).

:func:`counting_env` builds a tiny env whose observation says which env answered and how many
steps it took, so a test sees the order and the grouping of ``ProcessGroupEnv``'s replies without
the simulator; a ``bddl_file_name`` of ``"fail"`` makes its construction raise, ``"die"`` makes its
process exit on the first step.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np


class CountingEnv:
    """Counts steps; its ``obs`` is ``{"name", "steps", "pid"}``; its state is ``[steps]``."""

    builds = 0  # per process: how many envs this process built

    def __init__(self, name: str) -> None:
        CountingEnv.builds += 1
        self.name, self.steps = name, 0

    def _obs(self) -> dict[str, Any]:
        return {"name": self.name, "steps": self.steps, "pid": os.getpid(), "builds": CountingEnv.builds}

    def step(self, action: np.ndarray) -> tuple:
        if self.name == "die":
            os._exit(3)
        self.steps += 1
        return self._obs(), float(action[0]), bool(action[0] > 0), {"steps": self.steps}

    def reset(self) -> dict[str, Any]:
        self.steps = 0
        return self._obs()

    def seed(self, seed: int) -> None:
        self.seeded = seed

    def set_init_state(self, state: np.ndarray) -> dict[str, Any]:
        self.steps = int(state[0])
        return self._obs()

    def get_sim_state(self) -> np.ndarray:
        return np.array([float(self.steps)])

    def regenerate_obs_from_state(self, state: np.ndarray) -> dict[str, Any]:
        raise RuntimeError("a stand-in env has no camera")

    def close(self) -> None:
        pass


def counting_env(param: dict[str, Any], cameras: bool) -> CountingEnv:
    """The :data:`~rlinf.envs.libero.env_process.EnvFactory` of the tests."""
    if param["bddl_file_name"] == "fail":
        raise ValueError("this env cannot be built")
    return CountingEnv(param["bddl_file_name"])
