"""Stand-ins for LIBERO envs that a spawned process can build (module-level: spawn pickles them).

:func:`counting_env` builds a tiny env whose observation says which env answered and how many
steps it took, so a test sees the order and the grouping of ``ProcessGroupEnv``'s replies without
the simulator; a ``bddl_file_name`` of ``"fail"`` makes its construction raise, ``"die"`` makes its
process exit on the first step. Asked for a camera env (the params of
:func:`~rlinf.envs.libero.env_process.camera_params`), it builds a :class:`CameraStandIn`, whose
image of a recorded state shows what the state was, so a test sees which states were rendered.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np


class CountingEnv:
    """Counts steps; its ``obs`` is ``{"name", "steps", "pid"}``; its state is ``[steps, name code]``
    (the code: ``ord`` of the name's first letter; ``set_init_state`` reads the steps only)."""

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
        return np.array([float(self.steps), float(ord(self.name[0]))])

    def close(self) -> None:
        pass


class CameraStandIn:
    """The camera env of a task: its agentview image of a state ``[steps, name code]`` is ``size``
    px square, channel 0 the steps, channel 1 the name code and channel 2 each pixel's row (so the
    upright turn that ``get_libero_image`` makes shows). Like robosuite's, it renders only after a
    first reset."""

    def __init__(self, size: int) -> None:
        self.size, self.was_reset = size, False

    def reset(self) -> None:
        self.was_reset = True

    def regenerate_obs_from_state(self, state: np.ndarray) -> dict[str, Any]:
        if not self.was_reset:
            raise RuntimeError("the camera stand-in renders only after a first reset")
        image = np.empty((self.size, self.size, 3), dtype=np.uint8)
        image[..., 0], image[..., 1] = int(state[0]), int(state[1])
        image[..., 2] = np.arange(self.size)[:, None]
        return {"agentview_image": image}

    def close(self) -> None:
        pass


def counting_env(param: dict[str, Any], cameras: bool) -> CountingEnv | CameraStandIn:
    """The :data:`~rlinf.envs.libero.env_process.EnvFactory` of the tests."""
    if param["bddl_file_name"] == "fail":
        raise ValueError("this env cannot be built")
    if "camera_names" in param:
        assert cameras and param["camera_names"] == ["agentview"], param
        assert param["camera_heights"] == param["camera_widths"], param
        return CameraStandIn(param["camera_heights"])
    return CountingEnv(param["bddl_file_name"])
