"""One process of a :class:`~rlinf.envs.libero.process_group.ProcessGroupEnv`: its envs and the
commands it answers (run in the spawned child; the parent's side is ``process_group``).

:func:`serve` builds the envs, answers ``("ok", None)`` (or ``("error", traceback)``), then answers
each ``(command, args)`` with a method of :class:`EnvProcess` until ``close`` or its parent's
pipe ends. Without cameras an env is robosuite's camera-less ``ControlEnv``; with ``record``
the process keeps each env's MuJoCo states since its episode's start, and renders any of them
later through a camera env of the same task, built by the same factory once per task and size.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

# (RLinf's env-fn params of one env, cameras?) -> the env; a module-level function (spawn pickles it).
# It also builds the camera env that renders recorded states: params without a seed (it never samples
# a scene), with the agentview camera at the frames' size (:func:`camera_params`).
EnvFactory = Callable[[dict[str, Any], bool], Any]
CAMERA_KEYS = ("camera_heights", "camera_widths", "camera_names", "camera_depths", "camera_segmentations")


def build_env(param: dict[str, Any], cameras: bool) -> Any:
    """One LIBERO env from RLinf's env-fn params (``bddl_file_name``, ``seed``, ``init_params``);
    without a ``seed``, one left unseeded (the camera env of :func:`camera_params`)."""
    param = dict(param)
    seed = param.pop("seed", None)
    if cameras:
        from libero.libero.envs import OffScreenRenderEnv as env_class
    else:
        from libero.libero.envs.env_wrapper import ControlEnv as env_class

        param = {k: v for k, v in param.items() if k not in CAMERA_KEYS}
        param.update(use_camera_obs=False, has_offscreen_renderer=False, camera_names=[])
    env = env_class(**param)
    if seed is not None:
        env.seed(seed)
    return env


def camera_params(bddl: str, size: int) -> dict[str, Any]:
    """The factory's params of the camera env that renders a task's recorded states at ``size`` px."""
    return {
        "bddl_file_name": bddl,
        "camera_names": ["agentview"],
        "camera_heights": size,
        "camera_widths": size,
    }


class EnvProcess:
    """The envs of one process (runs in the child): the commands it answers, one method each."""

    def __init__(
        self, params: list[dict[str, Any]], cameras: bool, record: bool, rebuild: bool, factory: EnvFactory
    ) -> None:
        self.cameras, self.record, self.rebuild, self.factory = cameras, record, rebuild, factory
        self.envs = [factory(p, cameras) for p in params]
        self.bddl = [p["bddl_file_name"] for p in params]
        self.history: list[list[np.ndarray]] = [[] for _ in params]
        self.camera_envs: dict[tuple[str, int], Any] = {}
        self.last: dict[int, tuple] = {}  # env -> its last step's reply
        self.frozen: set[int] = set()  # envs that repeat their last reply until their reset

    def step(self, actions: Sequence[np.ndarray], ids: Sequence[int]) -> list[tuple]:
        out = []
        for action, i in zip(actions, ids, strict=True):
            if i not in self.frozen:
                self.last[i] = self.envs[i].step(action)
                if self.record:
                    self.history[i].append(self._state(i))
            out.append(self.last[i])
        return out

    def step_chunk(
        self, chunks: Sequence[np.ndarray], ids: Sequence[int], freeze_on_done: bool
    ) -> list[list[tuple]]:
        # Env by env, each through its whole chunk: no env waits for another env's step.
        out = []
        for actions, i in zip(chunks, ids, strict=True):
            replies = []
            for action in actions:
                replies.append(self.step([action], [i])[0])
                if freeze_on_done and replies[-1][2]:
                    self.freeze([i])
            out.append(replies)
        return out

    def freeze(self, ids: Sequence[int]) -> None:
        self.frozen.update(i for i in ids if i in self.last)

    def reset(self, ids: Sequence[int]) -> list[Any]:
        self.frozen.difference_update(ids)
        return [self.envs[i].reset() for i in ids]

    def seed(self, seed: int) -> None:
        for env in self.envs:
            env.seed(seed)

    def set_init_state(self, states: Sequence[np.ndarray], ids: Sequence[int]) -> list[Any]:
        self.frozen.difference_update(ids)
        return [self.envs[i].set_init_state(state) for state, i in zip(states, ids, strict=True)]

    def reconfigure(self, params: Sequence[dict[str, Any]], ids: Sequence[int]) -> None:
        for param, i in zip(params, ids, strict=True):
            if not self.rebuild and param["bddl_file_name"] == self.bddl[i]:
                continue  # the same task: the reset that follows sets the new initial state
            self.envs[i].close()
            self.envs[i] = self.factory(param, self.cameras)
            self.bddl[i] = param["bddl_file_name"]

    def mark_episode_start(self, ids: Sequence[int]) -> None:
        for i in ids:
            self.history[i] = [self._state(i)]

    def render(self, steps: Sequence[Sequence[int]], ids: Sequence[int], size: int) -> list[np.ndarray]:
        from rlinf.envs.libero.utils import get_libero_image

        out = []
        for wanted, i in zip(steps, ids, strict=True):
            camera = self._camera(self.bddl[i], size)
            frames = [get_libero_image(camera.regenerate_obs_from_state(self.history[i][s])) for s in wanted]
            out.append(np.ascontiguousarray(np.stack(frames)))
        return out

    def close(self) -> None:
        for env in [*self.envs, *self.camera_envs.values()]:
            env.close()

    def _state(self, i: int) -> np.ndarray:
        return np.asarray(self.envs[i].get_sim_state(), dtype=np.float64).copy()

    def _camera(self, bddl: str, size: int) -> Any:
        if (bddl, size) not in self.camera_envs:
            env = self.factory(camera_params(bddl, size), True)
            env.reset()  # robosuite renders only after a first reset
            self.camera_envs[(bddl, size)] = env
        return self.camera_envs[(bddl, size)]


def serve(conn: Any, params: list[dict[str, Any]], *settings: Any) -> None:
    """The child's loop: build the envs, then answer ``(command, args)`` until ``close``."""
    try:
        envs = EnvProcess(params, *settings)
        conn.send(("ok", None))
    except BaseException:
        conn.send(("error", traceback.format_exc()))
        return
    while True:
        try:
            command, args = conn.recv()
        except EOFError:  # the parent is gone
            envs.close()
            return
        try:
            result = getattr(envs, command)(*args)
            conn.send(("ok", result))
        except BaseException:
            conn.send(("error", traceback.format_exc()))
        if command == "close":
            return
