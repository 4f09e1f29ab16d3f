"""The project's LIBERO environment: RLinf's ``LiberoEnv`` plus an opt-in VLM reward model.

This module is the wiring only: hooks into RLinf's ``LiberoEnv`` that feed the pure
episode-reward core (:mod:`rlinf.envs.libero.episode_reward`), the live watch of the judge
(:mod:`vlm_reward.watch.judge_watch`: health metrics, canaries, the guard), the scoring client
(:mod:`vlm_reward.client.scoring`) and the JSONL episode log
(:mod:`rlinf.envs.libero.episode_log`, lines :class:`vlm_reward.client.episode_record.EpisodeRecord`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from rlinf._overlay import load_installed_module
from rlinf.envs.libero.episode_log import canary_line, episode_line, open_episode_log, split_name, worker_rank
from rlinf.envs.libero.episode_reward import Ended, EpisodeRewards
from rlinf.envs.libero.reward_term import JUDGE_SECONDS, Shaping
from rlinf.envs.libero.simulation_env import SimulationHooks
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.episode_log import EpisodeLogWriter
from vlm_reward.client.episode_record import Judgement
from vlm_reward.client.scoring import FinishedEpisode, RewardClient
from vlm_reward.ray_replicas.run_key import fetch_into_environ
from vlm_reward.watch.canaries import canary_counterfactual
from vlm_reward.watch.judge_watch import Canary, JudgeWatch

_upstream = load_installed_module(__name__)


class LiberoEnv(SimulationHooks, _upstream.LiberoEnv):
    """RLinf 0.3's LIBERO env whose success signal can come from a video VLM.

    With ``reward_model.enable: False`` and the ``simulation`` block at its defaults this is RLinf's
    class unchanged: no frame cache, same rewards, flags, observations and infos. ``simulation``
    (:mod:`rlinf.envs.libero.simulation_env`) changes how the physics runs, never the rewards.

    With ``reward_model.enable: True``:

    * Cached: the policy's main image (upright ``full_image``) of every step of each env's
      current episode, the reset frame included, dropped once the episode is scored (without
      cameras: each step's count, the frames sent rendered from recorded states at the end).
    * When the call fires: once per episode, the moment it first terminates or truncates
      (an ended env is not scored again before it is reset): its frames go to the client
      and the request is in flight while the chunk goes on. The results are collected at
      the end of ``chunk_step``, or before an auto-reset; a ``step`` called on its own is a
      chunk of one, so its episode is scored before it returns.
    * Reward: RLinf's ``_calc_step_reward`` with the VLM signal ``s`` in place of the
      termination flag: ``s = 0`` until the end step, then ``1[score >= success_threshold]``
      (``binary_reward``) or the score itself, held until reset (as the native flag is held
      while the simulator keeps reporting success). So ``reward_coef``, ``use_rel_reward``
      and the step penalty apply as usual. With ``use_for_training: False`` (shadow mode)
      the reward stays native and the VLM is only scored and logged.
    * Info keys: ``infos["episode"]`` of the chunk's last step (and the ``final_info`` of an
      auto-reset) gains ``VLM_METRIC_KEYS`` (values of each env's current episode, 0 until
      scored) and the judge's live health, the same value in every env (``WATCH_METRIC_KEYS``,
      the per-task rates of :mod:`vlm_reward.watch.judge_health` and ``reward_term.WORKER_METRICS``:
      the seconds spent on the judge); RLinf averages them
      into ``env/...`` metrics. When training on the VLM reward, ``return`` (and ``reward``,
      the return per step) is the return trained on: the rewards of the episode's steps up
      to and including its end step, VLM term included.
    * Canaries (``canary_rate`` > 0): some native successes are also sent, as a
      counterfactual, when they end; collected with the episodes, never trained on.
    * Guard (``guard.enable``): from the episode that trips a ``native`` or ``stop`` guard
      on, every episode trains on its native success as ``s`` (the native reward);
      ``stop`` also sets :attr:`reward_guard_stop`, which the training entry point reads.
    * Episode log: one JSONL line per scored episode (and one per canary, marked ``canary``)
      in ``<episode_log_dir>/vlm_episodes_<train|eval>_rank<N>.jsonl``, ``N`` the env
      worker's rank (``worker_info.rank``; 0 outside a worker).

    :meth:`set_reward_model` changes the ``reward_model`` block between episodes.

    RLinf methods overridden (each says what of RLinf 0.3 it relies on): ``reset``, ``step``,
    ``chunk_step``, ``_handle_auto_reset``, ``_calc_step_reward``, ``close`` and those of
    :class:`SimulationHooks`; everything else, ``_record_metrics`` included, is RLinf's.
    """

    def __init__(self, cfg: Any, num_envs: int, seed_offset: int, total_num_processes: int, worker_info: Any):
        self._reward_model = RewardModelConfig.from_mapping(cfg.get("reward_model", None))
        self._rewards: EpisodeRewards | None = None
        self._client: RewardClient | None = None
        self._log: EpisodeLogWriter | None = None
        self._watch: JudgeWatch | None = None
        self._env_steps = 0  # steps this env has taken, for the guard's message
        self._worker_rank = worker_rank(worker_info)  # checked before RLinf starts the env processes
        self._step_reward = np.zeros(num_envs)  # the last _calc_step_reward, for the return
        self._init_simulation(cfg, renders_for_judge=self._reward_model.enable)
        super().__init__(cfg, num_envs, seed_offset, total_num_processes, worker_info)
        if self._reward_model.enable:
            fetch_into_environ(self._reward_model.api_key_env)  # a key the run's driver published
            self._client = RewardClient(self._reward_model)
            self._log = self._open_episode_log(self._reward_model)
            self._rewards = EpisodeRewards(num_envs, self._reward_model)
            tasks = range(self.task_suite.get_num_tasks())  # the label set of the per-task metrics
            self._watch = JudgeWatch(self._reward_model, tasks, int(self.seed), training=not self.is_eval)

    # ---- public surface ---------------------------------------------------------------

    @property
    def reward_model(self) -> RewardModelConfig:
        """The validated ``reward_model`` block in force (change it with :meth:`set_reward_model`)."""
        return self._reward_model

    @property
    def reward_client(self) -> RewardClient | None:
        """The scoring client in use; None when disabled."""
        return self._client

    @property
    def judge_watch(self) -> JudgeWatch | None:
        """The live watch of the judge (health windows, canaries, guard); None when disabled."""
        return self._watch

    @property
    def reward_guard_stop(self) -> str | None:
        """Why the guard (action ``stop``) asks the run to end, or None; the training entry point
        reads it after each step, saves a checkpoint and exits (see ``train_embodied_agent.py``)."""
        return None if self._watch is None else self._watch.stop_request

    def set_reward_model(self, reward_model: RewardModelConfig | Mapping[str, Any]) -> RewardModelConfig:
        """Use ``reward_model`` (a whole block, validated like the YAML's) for the episodes to come.

        Call it between episodes: ``RuntimeError`` while a chunk is running or a score is
        pending. ``enable`` is fixed when the env is built (``ValueError``). The client is
        rebuilt (endpoint, timeouts, pool) and the episode log reopened if its dir changed; the
        judge's watch keeps its windows, canary draws and guard where their settings did not change.
        """
        new = (
            reward_model
            if isinstance(reward_model, RewardModelConfig)
            else RewardModelConfig.from_mapping(reward_model)
        )
        if new.enable != self._reward_model.enable:
            raise ValueError(
                "reward_model.enable is fixed when the env is built "
                f"(built with {self._reward_model.enable}), got {new.enable}; build another env."
            )
        if self._rewards is not None:
            self._rewards.reconfigure(new)  # raises unless between episodes, before anything changes
            self._watch.reconfigure(new)
            old_client, self._client = self._client, RewardClient(new)
            old_client.close()
            if new.episode_log_dir != self._reward_model.episode_log_dir:
                if self._log is not None:
                    self._log.close()
                self._log = self._open_episode_log(new)
        self._reward_model = new
        return new

    # ---- hooks into RLinf's LiberoEnv (0.3): only these six are overridden ----------------

    def reset(self, env_idx: Any = None, reset_state_ids: Any = None) -> tuple[dict, dict]:
        """RLinf's ``LiberoEnv.reset(env_idx, reset_state_ids)``, then each reset env's first frame cached.

        Depends on RLinf returning the reset obs with ``main_images`` for every env (those
        not reset included) and on ``_handle_*_auto_reset`` resetting through this method.
        """
        obs, infos = super().reset(env_idx=env_idx, reset_state_ids=reset_state_ids)
        if self._rewards is not None:
            idx = np.arange(self.num_envs) if env_idx is None else np.atleast_1d(env_idx)
            frames = self._reward_frames(obs)
            for env in idx:
                self._rewards.start(int(env), frames[int(env)])
        return obs, infos

    def step(self, actions: Any = None, auto_reset: bool = True) -> tuple:
        """RLinf's ``LiberoEnv.step(actions, auto_reset)`` with each step's frame recorded.

        RLinf's ``chunk_step`` calls it per step with ``auto_reset=False`` inside our window;
        called on its own it is a window of one step, scored before it returns, and the
        auto-reset (RLinf's ``_handle_auto_reset``) comes after the scores are collected.
        """
        if self._rewards is None:
            return super().step(actions, auto_reset)
        if self._rewards.window_open:  # one step of our chunk_step
            return self._recorded_step(actions)
        self._open_window()  # called on its own: a chunk of one step
        try:
            obs, reward, terminations, truncations, infos = self._recorded_step(actions)
            self._collect(infos)
            self._rewards.close_window(reward.numpy().reshape(-1, 1))
        except BaseException:
            self._abandon_window()
            raise
        dones = (terminations | truncations).numpy()
        if auto_reset and self.auto_reset and dones.any():
            obs, infos, _ = self._handle_auto_reset(dones, obs, infos)
        return obs, reward, terminations, truncations, infos

    def chunk_step(self, chunk_actions: Any) -> tuple:
        """RLinf's ``LiberoEnv.chunk_step(chunk_actions)`` as one window of the reward core.

        Depends on RLinf stepping through ``self.step(..., auto_reset=False)`` and auto-resetting
        once, at the end, through ``_handle_auto_reset``; the scores still pending then are
        collected here and the VLM terms added to the chunk's ``[num_envs, steps]`` rewards.
        """
        if self._rewards is None:
            return super().chunk_step(chunk_actions)
        self._open_window()
        try:
            obs_list, rewards, terminations, truncations, infos_list = super().chunk_step(chunk_actions)
            self._collect(infos_list[-1])  # without an auto-reset nothing has collected them yet
            self._rewards.close_window(rewards.numpy())
        except BaseException:
            self._abandon_window()
            raise
        return obs_list, rewards, terminations, truncations, infos_list

    def _handle_auto_reset(self, dones: np.ndarray, final_obs: Any, infos: dict) -> tuple:
        """RLinf's ``LiberoEnv._handle_auto_reset(dones, final_obs, infos)``, after collecting the scores.

        RLinf deep-copies ``infos`` into ``final_info`` before it resets, so the ended
        episodes' metrics written here reach ``final_info``; the reset ids are still theirs.
        """
        if self._rewards is not None:
            self._collect(infos)
        return super()._handle_auto_reset(dones, final_obs, infos)

    def _calc_step_reward(self, terminations: np.ndarray) -> np.ndarray:
        """RLinf's ``LiberoEnv._calc_step_reward(terminations)`` fed the held VLM signal instead.

        RLinf's ``step`` calls it once per step, before ``_record_metrics`` adds the result to
        ``returns``; the step reward (float64, before ``to_tensor``) is kept for the return.
        """
        if not self._trains_on_vlm:
            return super()._calc_step_reward(terminations)
        self._step_reward = super()._calc_step_reward(self._rewards.signal.copy())
        return self._step_reward

    def close(self) -> None:
        """Wait for in-flight calls; release the client and the episode log, then RLinf's ``close``."""
        if self._client is not None:
            self._client.close()
        if self._log is not None:
            self._log.close()
        super().close()

    # ---- feeding the core -------------------------------------------------------------

    @property
    def _trains_on_vlm(self) -> bool:
        return self._reward_model.enable and self._reward_model.use_for_training

    def _open_window(self) -> None:
        self._rewards.open_window()
        self._watch.new_chunk()

    def _abandon_window(self) -> None:
        self._rewards.abandon_window()
        self._watch.abandon()

    def _recorded_step(self, actions: Any) -> tuple:
        """One RLinf step without auto-reset; the return counted over the VLM episode; frames recorded.

        RLinf's ``_record_metrics`` counted the step into ``returns`` while there was no native
        success (``success_once`` before the step); a VLM episode counts it up to and including
        its end step, so the difference is added here, before the step's end is recorded.
        """
        counted_by_rlinf = ~self.success_once
        obs, reward, terminations, truncations, infos = super().step(actions, auto_reset=False)
        self._env_steps += 1
        if self._trains_on_vlm:
            self._rewards.count_return(self.returns, self._step_reward, counted_by_rlinf)
            self._publish_return(infos["episode"])
        dones = (terminations | truncations).numpy()
        ended = self._rewards.record_step(
            self._reward_frames(obs), dones, self.success_once, self.elapsed_steps
        )
        if ended:
            frames = self._judge_frames({e.env: e.frames for e in ended}, self._reward_model.nframes)
            for episode in ended:
                self._submit(episode, frames[episode.env])
        return obs, reward, terminations, truncations, infos

    def _submit(self, ended: Ended, frames: list[np.ndarray]) -> None:
        """Start scoring an episode that just ended, under its env's task instruction: the call
        runs on the client's threads while the rollout goes on, and the core collects it when
        the chunk ends (or before the env resets)."""
        episode = FinishedEpisode(self.task_descriptions[ended.env], frames, ended.native_success)
        self._rewards.submitted(ended.env, self._client.submit(episode))
        perturbation = self._watch.canary_for(ended.native_success)
        if perturbation is not None:
            self._submit_canary(ended, frames, perturbation)

    def _submit_canary(self, ended: Ended, frames: list[np.ndarray], perturbation: str) -> None:
        """Start scoring the canary of a native success: the frames the client sends for it,
        perturbed, under the same instruction (``wrong_task``: the suite's next task's); a
        native failure by construction, never trained on."""
        task_id = int(self.task_ids[ended.env])
        made = canary_counterfactual(
            frames,
            self.task_descriptions[ended.env],
            perturbation,
            self._reward_model.nframes,
            hard_negative=self._other_task_text(task_id),
            seed=(int(self.seed), self._env_steps, ended.env),
        )
        if made is None:
            return
        future = self._client.submit(FinishedEpisode(made.task_text, list(made.frames), False))
        self._watch.canary_started(Canary(ended.env, task_id, perturbation), future)

    def _other_task_text(self, task_id: int) -> str | None:
        count = self.task_suite.get_num_tasks()
        return None if count < 2 else self.task_suite.get_task((task_id + 1) % count).language

    def _review(self, env: int, native_success: bool, result: Judgement) -> bool:
        """The watch's say on a collected episode: may it train on the judge's verdict?"""
        return self._watch.episode(int(self.task_ids[env]), native_success, result, self._env_steps)

    def _collect(self, infos: dict) -> None:
        """Collect the pending scores into RLinf's arrays, the log, and ``infos["episode"]``."""
        shaping = Shaping(float(self.cfg.reward_coef), bool(self.use_rel_reward))
        cfg, rank = self._reward_model, self._worker_rank
        started = time.perf_counter()  # waiting for the judge: reward_term.WORKER_METRICS
        collected = self._rewards.collect(self.returns, self.prev_step_reward, shaping, self._review)
        self._judge_seconds += time.perf_counter() - started
        for scored in collected:
            if self._log is not None:
                self._log.write(episode_line(self, rank, scored, cfg))
        for canary in self._watch.collect_canaries(self._env_steps):
            if self._log is not None:
                self._log.write(canary_line(self, rank, canary, cfg))
        if "episode" in infos:
            infos["episode"].update({k: torch.as_tensor(v.copy()) for k, v in self._rewards.metrics.items()})
            watch = {**self._watch.metrics(), JUDGE_SECONDS: self._judge_seconds}  # the same in every env
            infos["episode"].update(
                {k: torch.full((self.num_envs,), v, dtype=torch.float64) for k, v in watch.items()}
            )
            if self._trains_on_vlm:
                self._publish_return(infos["episode"])

    def _publish_return(self, episode_info: dict) -> None:
        """Write the current ``return`` and ``reward`` (return per step) into ``infos["episode"]``."""
        lengths = self._rewards.lengths(self.elapsed_steps)
        episode_info["return"] = torch.as_tensor(self.returns.copy())
        episode_info["reward"] = torch.as_tensor(self.returns / np.maximum(lengths, 1))

    def _open_episode_log(self, cfg: RewardModelConfig) -> EpisodeLogWriter | None:
        return open_episode_log(cfg.episode_log_dir, split_name(self.is_eval), self._worker_rank)
