"""One labelled LIBERO episode: the physics without cameras, then only the kept frames rendered.

Rendering is ~90% of a LIBERO step on this CPU (benchmark 7: EGL software rendering, ~80 ms per
camera per frame against ~17 ms of physics and control) and never changes the physics. So an
episode is played twice over one MuJoCo state sequence: :class:`LabelledScene` steps a camera-less
env (:mod:`reward_eval.libero_task`: the same env and reset as ``benchmarks/expert_success.py``'s,
``LiberoEnv``'s reset), recording the flattened simulator state and the
simulator's verdict at every step; a second env of the same task, with the agentview camera, is
then set to each kept state only (robosuite's own ``regenerate_obs_from_state``) and its image
turned upright by RLinf's own ``get_libero_image``, exactly as ``LiberoEnv`` shows the policy and
the judge its main image.

The verdict per step is LIBERO's own (:func:`reward_eval.libero_task.goal_verdict`): success and
the fraction of the goal's predicates that hold (the simulator's progress, kept for progress judges).

A policy is any registered one (:func:`reward_eval.policies.make_policy`), driven through a
one-env stand-in of ``LiberoEnv`` (:class:`_OneEnv`) that exposes what policies read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reward_eval.libero_task import (
    goal_verdict,
    headless_env,
    init_states,
    initial_state,
    reset_to,
    task_files,
)
from reward_eval.policies import make_policy

CHUNK = 8  # actions per policy call, as OpenVLA-OFT and the evaluation job


@dataclass
class Trajectory:
    """One played episode: per step (the reset frame is step 0) the flattened simulator state,
    whether the goal holds and the fraction of goal predicates that hold.

    ``end`` is the episode's last step as the env ends it (the first success, else the step
    limit; the step limit always when successes do not end episodes, RLinf's
    ``ignore_terminations``); steps after it (``after`` steps played on past a success) are kept
    for more frames of the goal holding, and never belong to the episode the judge is sent.
    """

    states: list[np.ndarray] = field(default_factory=list)
    success: list[bool] = field(default_factory=list)
    goal_fraction: list[float] = field(default_factory=list)
    end: int = 0

    @property
    def native_success(self) -> bool:
        """The simulator reported success within the episode (at its end step)."""
        return self.success[self.end]


@dataclass
class _OneEnv:
    """What a policy reads of ``LiberoEnv`` (``num_envs``, ``current_raw_obs``,
    ``task_descriptions``), for one env played outside RLinf."""

    task: str
    current_raw_obs: list[Any]
    num_envs: int = 1

    @property
    def task_descriptions(self) -> list[str]:
        return [self.task]


class LabelledScene:
    """The two envs of one task: a camera-less one that plays, a camera one that renders.

    ``camera`` is the render's height and width, as ``init_params.camera_heights`` in the env YAML.
    """

    def __init__(self, suite: str, task_id: int, camera: int) -> None:
        from libero.libero.envs import OffScreenRenderEnv

        bddl, self.language = task_files(suite, task_id)
        self.physics = headless_env(bddl)
        self.camera = OffScreenRenderEnv(
            bddl_file_name=bddl, camera_names=["agentview"], camera_heights=camera, camera_widths=camera
        )
        self.camera.reset()  # robosuite renders only after a first reset
        self.states = init_states(suite, task_id)

    def close(self) -> None:
        self.physics.close()
        self.camera.close()

    def play(
        self,
        trial: int,
        policy: str,
        policy_kwargs: dict[str, Any],
        seed: int,
        max_steps: int,
        after: int,
        to_horizon: bool = False,
    ) -> Trajectory:
        """Play one episode of ``policy`` from initial state ``trial`` to its first success or
        ``max_steps``, then ``after`` more steps if it succeeded; nothing is rendered.

        ``to_horizon``: a success does not end the episode, which runs to ``max_steps`` (the
        judge-only runs' episodes: ``ignore_terminations``); its verdict is the one at that step,
        and nothing is played after it (``after`` is not used)."""
        env = self.physics
        obs = reset_to(env, initial_state(env, self.states, trial))
        agent = make_policy(policy, seed=seed, **policy_kwargs)
        one = _OneEnv(self.language, [obs])
        agent.reset(one, {})
        trajectory = Trajectory()
        self._record(trajectory)
        end = None
        played_on = 0 if to_horizon else after
        while True:
            for action in agent.act(one, {}, CHUNK)[0]:
                obs, *_ = env.step(action)
                one.current_raw_obs = [obs]
                self._record(trajectory)
                step = len(trajectory.states) - 1
                ended = trajectory.success[-1] and not to_horizon
                if end is None and (ended or step == max_steps):
                    end = step
                if end is not None and step >= end + (played_on if trajectory.success[end] else 0):
                    trajectory.end = end
                    return trajectory

    def _record(self, trajectory: Trajectory) -> None:
        success, fraction = goal_verdict(self.physics)
        trajectory.states.append(np.asarray(self.physics.env.sim.get_state().flatten()).copy())
        trajectory.success.append(success)
        trajectory.goal_fraction.append(fraction)

    def render(self, state: np.ndarray) -> np.ndarray:
        """The upright main image at ``state``, as ``LiberoEnv`` shows it: uint8 ``(H, W, 3)``."""
        from rlinf.envs.libero.utils import get_libero_image

        obs = self.camera.regenerate_obs_from_state(state)
        return np.ascontiguousarray(get_libero_image(obs))
