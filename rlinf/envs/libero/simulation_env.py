"""The ``simulation`` block's hooks into RLinf 0.3's ``LiberoEnv`` (:mod:`rlinf.envs.libero.simulation`).

:class:`SimulationHooks` sits between this fork's ``LiberoEnv`` and RLinf's. With the block at
its defaults every hook hands straight to RLinf's method, so the env is RLinf's as it is. Otherwise:

* ``_init_env``: the envs run in a :class:`~rlinf.envs.libero.process_group.ProcessGroupEnv`
  (``envs_per_process`` to a process, without cameras if ``cameras`` is off, a reset that keeps
  the task not rebuilding its simulator unless ``rebuild_on_reset``, states recorded when the
  judge's frames are to be rendered from them);
* ``get_env_fn_params``: without ``rebuild_on_reset``, robosuite's soft reset (``hard_reset:
  False``: the model is not reloaded from its XML at every reset; the initial state is set after
  it either way);
* ``chunk_step``: the processes take the chunk's steps at once
  (:meth:`~rlinf.envs.libero.process_group.ProcessGroupEnv.step_ahead`), then RLinf's
  ``chunk_step`` asks for them one by one;
* ``_record_metrics``: without ``step_ended_episodes``, an env whose episode just succeeded is
  frozen until its reset (:meth:`~rlinf.envs.libero.process_group.ProcessGroupEnv.freeze`);
* ``_compute_total_num_group_envs``: ``initial_states`` becomes RLinf's pool of valid reset ids,
  which its random and ordered draws then use;
* ``_extract_image_and_state`` / ``_wrap_obs``: placeholder images without cameras; the packed
  :mod:`~rlinf.envs.libero.expert_state` in ``states`` with ``expert_state``;
* ``reset``: each reset env's recorded episode starts at its reset state, and its observation
  is packed again once RLinf has zeroed its elapsed steps.

For the VLM reward, :meth:`SimulationHooks._reward_frames` is what the reward core caches per
step (the main images, or each env's elapsed step when the frames are rendered later) and
:meth:`SimulationHooks._judge_frames` turns a finished episode's cache into the frames its
scoring call sends (rendered: only the ``nframes`` the client would pick, at ``judge_frame_size``).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from rlinf.envs.libero import expert_state
from rlinf.envs.libero.process_group import ProcessGroupEnv
from rlinf.envs.libero.simulation import BLOCK, SimulationConfig
from vlm_reward.frames import evenly_spaced

PLACEHOLDER = np.zeros((1, 1, 3), dtype=np.uint8)  # a camera's image without a camera
CAMERA_IMAGES = ("agentview_image", "robot0_eye_in_hand_image")  # what RLinf's image helpers read


class SimulationHooks:
    """The hooks listed in the module docstring; call :meth:`_init_simulation` before RLinf's ``__init__``."""

    def _init_simulation(self, cfg: Any, renders_for_judge: bool) -> None:
        """Read the block; ``renders_for_judge``: a reward model that needs the episodes' frames."""
        self._sim = SimulationConfig.from_mapping(cfg.get(BLOCK, None))
        self._judge_seconds = 0.0  # rendering for and waiting on the judge (reward_term.WORKER_METRICS)
        self._records_states = self._sim.renders_judge_frames and renders_for_judge
        if not self._sim.step_ended_episodes and cfg.get("ignore_terminations", False):
            raise ValueError(
                "simulation.step_ended_episodes: False needs ignore_terminations: False (an episode that "
                "ignores terminations goes on after a success by design)."
            )
        if not self._sim.is_default and os.environ.get("LIBERO_TYPE", "standard") != "standard":
            raise ValueError(
                f"the simulation block needs standard LIBERO; LIBERO_TYPE is {os.environ['LIBERO_TYPE']!r}."
            )

    @property
    def simulation(self) -> SimulationConfig:
        """The validated ``simulation`` block in force."""
        return self._sim

    # ---- RLinf's LiberoEnv methods ------------------------------------------------------

    def _init_env(self) -> None:
        if self._sim.is_default:
            return super()._init_env()
        self.env = ProcessGroupEnv(
            self.get_env_fn_params(),
            self._sim.envs_per_process,
            cameras=self._sim.cameras,
            record_states=self._records_states,
            rebuild_same_task=self._sim.rebuild_on_reset,
        )

    def chunk_step(self, chunk_actions: Any) -> tuple:
        if not self._sim.is_default:
            # RLinf steps a chunk without resetting inside it (auto_reset=False), so the processes can
            # take all its steps at once; freezing there on `done` (LIBERO's success) is what
            # _record_metrics would do after each step.
            actions = (
                chunk_actions.detach().cpu().numpy() if hasattr(chunk_actions, "detach") else chunk_actions
            )
            self.env.step_ahead(actions, freeze_on_done=not self._sim.step_ended_episodes)
        return super().chunk_step(chunk_actions)

    def get_env_fn_params(self, env_idx: Any = None) -> list[dict[str, Any]]:
        params = super().get_env_fn_params(env_idx)
        if not self._sim.rebuild_on_reset:  # robosuite's soft reset: the model is not reloaded
            params = [{**param, "hard_reset": False} for param in params]
        return params

    def _compute_total_num_group_envs(self) -> None:
        super()._compute_total_num_group_envs()
        if self._sim.initial_states is not None:
            self._valid_reset_state_ids = np.array(
                [self._reset_id(*pair) for pair in self._sim.initial_states]
            )

    def _record_metrics(self, step_reward: np.ndarray, terminations: np.ndarray, infos: dict) -> dict:
        infos = super()._record_metrics(step_reward, terminations, infos)
        if not self._sim.step_ended_episodes and terminations.any():  # LIBERO's termination: success
            self.env.freeze(np.flatnonzero(terminations))
        return infos

    def _extract_image_and_state(self, obs: dict[str, Any]) -> dict[str, Any]:
        if not self._sim.cameras:  # RLinf's own helpers, on placeholder images
            obs = {**obs, **{key: PLACEHOLDER for key in CAMERA_IMAGES}}
        return super()._extract_image_and_state(obs)

    def _wrap_obs(self, obs_list: Any) -> dict[str, Any]:
        obs = super()._wrap_obs(obs_list)
        if self._sim.expert_state:
            import torch

            first = self.seed_offset * self.num_envs  # ids unique over env workers and stages
            packed = [
                expert_state.pack(raw, first + env, int(self.elapsed_steps[env]))
                for env, raw in enumerate(obs_list)
            ]
            obs["states"] = torch.as_tensor(np.stack(packed))
        return obs

    def reset(self, env_idx: Any = None, reset_state_ids: Any = None) -> tuple[dict, dict]:
        obs, infos = super().reset(env_idx=env_idx, reset_state_ids=reset_state_ids)
        if self._sim.is_default:
            return obs, infos
        idx = np.arange(self.num_envs) if env_idx is None else np.atleast_1d(env_idx)
        if self._records_states:
            self.env.mark_episode_start(idx)
        if self._sim.expert_state:  # RLinf packed them before zeroing the elapsed steps
            obs = self._wrap_obs(self.current_raw_obs)
        return obs, infos

    # ---- the reward model's frames --------------------------------------------------------

    def _reward_frames(self, obs: dict[str, Any]) -> np.ndarray:
        """Per env, what the reward core caches for this step: its main image, or its elapsed step."""
        if self._records_states:
            return self.elapsed_steps.copy()
        return obs["main_images"].numpy()

    def _judge_frames(self, cached: dict[int, list[np.ndarray]], nframes: int) -> dict[int, list[np.ndarray]]:
        """Per env, the frames a finished episode's scoring call sends, from what the core cached
        (rendered for every env at once, the processes in parallel; the time counts as the judge's)."""
        if not self._records_states:
            return cached
        started = time.perf_counter()
        steps = {
            env: [int(frames[i]) for i in evenly_spaced(len(frames), nframes)]
            for env, frames in cached.items()
        }
        size = self._sim.judge_frame_size or int(self.cfg.init_params.camera_heights)
        rendered = self.env.render_frames(steps, size)
        self._judge_seconds += time.perf_counter() - started
        return {env: list(frames) for env, frames in rendered.items()}

    def _reset_id(self, task: int, trial: int) -> int:
        """RLinf's flat reset-state id of ``trial`` of ``task`` (ValueError outside the suite)."""
        bins = self.trial_id_bins
        if task >= len(bins) or trial >= bins[task]:
            raise ValueError(
                f"simulation.initial_states names task {task} trial {trial}; {self.cfg.task_suite_name} has "
                f"{len(bins)} tasks with {bins[task] if task < len(bins) else 0} trials for this one."
            )
        return int(sum(bins[:task]) + trial)
