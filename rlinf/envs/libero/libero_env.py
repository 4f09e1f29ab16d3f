"""The project's LIBERO environment: RLinf's ``LiberoEnv`` plus an opt-in VLM reward model."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch

from rlinf._overlay import load_installed_module
from rlinf.envs.libero.episode_scoring import (
    VLM_METRIC_KEYS,
    EpisodeLog,
    episode_metrics,
    episode_record,
    success_signal,
)
from rlinf.envs.libero.reward_model_config import RewardModelConfig
from rlinf.envs.libero.vlm_reward_client import Episode, VLMRewardClient

_upstream = load_installed_module(__name__)


class LiberoEnv(_upstream.LiberoEnv):
    """RLinf 0.3's LIBERO env whose success signal can come from a video VLM.

    With ``reward_model.enable: False`` (the default) this is RLinf's class unchanged: no
    frame cache, same rewards, flags, observations and infos.

    With ``reward_model.enable: True``:

    * Cached: the policy's main image (upright ``full_image``) of every step of each env's
      current episode, the reset frame included; cleared on reset and after scoring.
    * When the call fires: once per episode, at its first termination or truncation (an
      ended env is not scored again before it is reset). All episodes that end in one
      ``chunk_step`` are scored together at the end of it, before any auto-reset.
    * Reward: RLinf's ``_calc_step_reward`` with the VLM signal ``s`` in place of the
      termination flag: ``s = 0`` until the end step, then ``1[score >= success_threshold]``
      (``binary_reward``) or the score itself, held until reset (as the native flag is held
      while the simulator keeps reporting success). So ``reward_coef``, ``use_rel_reward``
      and the step penalty apply as usual. With ``use_for_training: False`` (shadow mode)
      the reward stays native and the VLM is only scored and logged.
    * Info keys: ``infos["episode"]`` gains ``VLM_METRIC_KEYS`` (values of each env's
      current episode, 0 until scored); RLinf averages them into ``env/...`` metrics.
      When training on the VLM reward, ``return`` (and ``reward``, the return per step) is the
      return trained on: the rewards of the episode's steps up to and including its end step,
      VLM term included. RLinf sums rewards while the simulator has not reported success, and
      before the VLM term is known, so its own count would miss the term (see ``_record_metrics``).
    * Episode log: one JSONL line per scored episode in ``reward_model.episode_log_dir``.
    """

    def __init__(self, cfg: Any, num_envs: int, seed_offset: int, total_num_processes: int, worker_info: Any):
        self.reward_model = RewardModelConfig.from_mapping(cfg.get("reward_model", None))
        super().__init__(cfg, num_envs, seed_offset, total_num_processes, worker_info)
        if self.reward_model.enable:
            self._init_reward_model()

    # ---- hooks into RLinf's LiberoEnv -------------------------------------------------

    def reset(self, env_idx: Any = None, reset_state_ids: Any = None) -> tuple[dict, dict]:
        obs, infos = super().reset(env_idx=env_idx, reset_state_ids=reset_state_ids)
        if self.reward_model.enable:
            idx = np.arange(self.num_envs) if env_idx is None else np.atleast_1d(env_idx)
            for i in idx:
                self._start_episode(int(i), obs["main_images"][i])
        return obs, infos

    def step(self, actions: Any = None, auto_reset: bool = True) -> tuple:
        if not self.reward_model.enable:
            return super().step(actions, auto_reset)
        if not self._in_chunk:
            self._chunk_pos = 0
        obs, reward, terminations, truncations, infos = super().step(actions, auto_reset=False)
        self._track_step(obs["main_images"], terminations | truncations)
        self._chunk_pos += 1
        dones = (terminations | truncations).cpu().numpy()
        if auto_reset and self.auto_reset and dones.any():
            obs, infos, _ = self._handle_auto_reset(dones, obs, infos)
            self._apply_patches(reward.view(-1, 1))
        return obs, reward, terminations, truncations, infos

    def chunk_step(self, chunk_actions: Any) -> tuple:
        if not self.reward_model.enable:
            return super().chunk_step(chunk_actions)
        self._in_chunk, self._chunk_pos = True, 0
        try:
            obs_list, rewards, terminations, truncations, infos_list = super().chunk_step(chunk_actions)
        finally:
            self._in_chunk = False
        self._score_pending(infos_list[-1])  # without auto-reset nothing scored them yet
        self._apply_patches(rewards)
        return obs_list, rewards, terminations, truncations, infos_list

    def _handle_auto_reset(self, dones: np.ndarray, final_obs: Any, infos: dict) -> tuple:
        if self.reward_model.enable:
            self._score_pending(infos)  # before the reset clears the frames and success flags
        return super()._handle_auto_reset(dones, final_obs, infos)

    def _calc_step_reward(self, terminations: np.ndarray) -> np.ndarray:
        if self.reward_model.enable and self.reward_model.use_for_training:
            return super()._calc_step_reward(self._signal.copy())
        return super()._calc_step_reward(terminations)

    def _record_metrics(self, step_reward: np.ndarray, terminations: np.ndarray, infos: dict) -> dict:
        """RLinf's metrics, with ``return`` counted over the VLM episode when training on it.

        RLinf adds a step's reward to the return while ``success_once`` is unset. A VLM episode
        ends at its first termination or truncation and gets its reward at that step, which
        (with ``ignore_terminations``) can come after a native success, so here the steps up to
        and including the end step count. The VLM term itself is added when it is known, in
        :meth:`_score_pending`.
        """
        if not self._trains_on_vlm:
            return super()._record_metrics(step_reward, terminations, infos)
        counted_by_rlinf = ~self.success_once  # before RLinf updates it for this step
        infos = super()._record_metrics(step_reward, terminations, infos)
        counted = ~self._ended  # this step included: _track_step marks the end after it
        self.returns += step_reward * (counted.astype(float) - counted_by_rlinf.astype(float))
        self._publish_return(infos["episode"])
        return infos

    def _publish_return(self, episode_info: dict) -> None:
        """Write the current ``return`` and ``reward`` (return per step) into ``infos["episode"]``."""
        lengths = np.where(self._ended, self._length_at_end, self.elapsed_steps)
        episode_info["return"] = torch.as_tensor(self.returns.copy())
        episode_info["reward"] = torch.as_tensor(self.returns / np.maximum(lengths, 1))

    def close(self) -> None:
        """Release the reward client and the episode log (the env processes stay RLinf's)."""
        if self.reward_model.enable:
            self._client.close()
            if self._log is not None:
                self._log.close()
        super().close()

    # ---- episode tracking -------------------------------------------------------------

    @property
    def _trains_on_vlm(self) -> bool:
        return self.reward_model.enable and self.reward_model.use_for_training

    def _init_reward_model(self) -> None:
        n = self.num_envs
        self._client = VLMRewardClient(self.reward_model)
        self._log = self._open_episode_log()
        self._frames: list[list[np.ndarray]] = [[] for _ in range(n)]
        self._ended = np.zeros(n, dtype=bool)
        self._native_at_end = np.zeros(n, dtype=bool)
        self._length_at_end = np.zeros(n, dtype=np.int64)
        self._signal = np.zeros(n)  # the s fed to _calc_step_reward, held after the end step
        self._pending: dict[int, int] = {}  # env -> position of its end step in this chunk
        self._patches: list[tuple[int, int, float]] = []  # (env, chunk position, s)
        self._metrics = {key: np.zeros(n) for key in VLM_METRIC_KEYS}
        self._episode_counter = np.zeros(n, dtype=np.int64)
        self._in_chunk, self._chunk_pos = False, 0

    def _open_episode_log(self) -> EpisodeLog | None:
        log_dir = self.reward_model.episode_log_dir
        if log_dir is None:
            return None
        split = "eval" if self.is_eval else "train"
        return EpisodeLog(os.path.join(log_dir, f"vlm_episodes_{split}_rank{self.seed_offset}.jsonl"))

    def _start_episode(self, env: int, main_image: torch.Tensor) -> None:
        self._frames[env] = [main_image.cpu().numpy().copy()]
        self._ended[env] = False
        self._signal[env] = 0.0
        self._pending.pop(env, None)
        for values in self._metrics.values():
            values[env] = 0.0

    def _track_step(self, main_images: torch.Tensor, dones: torch.Tensor) -> None:
        for env in map(int, np.flatnonzero(~self._ended)):
            self._frames[env].append(main_images[env].cpu().numpy().copy())
            if bool(dones[env]):
                self._ended[env] = True
                self._pending[env] = self._chunk_pos
                self._native_at_end[env] = bool(self.success_once[env])
                self._length_at_end[env] = int(self.elapsed_steps[env])

    def _score_pending(self, infos: dict) -> None:
        """Score every episode that ended since the last call, in one concurrent round trip."""
        envs = sorted(self._pending)
        episodes = [
            Episode(self.task_descriptions[env], self._frames[env], bool(self._native_at_end[env]))
            for env in envs
        ]
        results = self._client.score_many(episodes)
        for env, result in zip(envs, results, strict=True):
            native = bool(self._native_at_end[env])
            if self.reward_model.use_for_training:
                signal = success_signal(result.score, self.reward_model)
                self._patches.append((env, self._pending[env], signal))
                self.returns[env] += float(self.cfg.reward_coef) * signal  # the end step's VLM term
            for key, value in episode_metrics(result, native, self.reward_model).items():
                self._metrics[key][env] = value
            if self._log is not None:
                self._log.write(episode_record(result, native, self.reward_model, **self._episode_meta(env)))
            self._episode_counter[env] += 1
            self._frames[env] = []  # scored: the frames are not needed any more
        self._pending.clear()
        if "episode" in infos:
            infos["episode"].update({k: torch.as_tensor(v.copy()) for k, v in self._metrics.items()})
            if self.reward_model.use_for_training:
                self._publish_return(infos["episode"])

    def _episode_meta(self, env: int) -> dict[str, Any]:
        task_id, trial_id = int(self.task_ids[env]), int(self.trial_ids[env])
        first_state_of_task = int(self.cumsum_trial_id_bins[task_id - 1]) if task_id > 0 else 0
        return {
            "split": "eval" if self.is_eval else "train",
            "rank": int(self.seed_offset),
            "env": env,
            "episode": int(self._episode_counter[env]),
            "task_id": task_id,
            "task_text": self.task_descriptions[env],
            "trial_id": trial_id,
            "reset_state_id": first_state_of_task + trial_id,
            "episode_length": int(self._length_at_end[env]),
        }

    def _apply_patches(self, rewards: torch.Tensor) -> None:
        """Add the VLM signal to the rewards of this chunk, now that the scores are known.

        Every step of the chunk was shaped with ``s = 0`` for the ended envs; the difference
        to the exact formula is ``reward_coef * s`` at the end step and, without
        ``use_rel_reward``, at each later step of the chunk (``s`` is held).
        """
        coef = float(self.cfg.reward_coef)
        for env, pos, signal in self._patches:
            if self.use_rel_reward:
                rewards[env, pos] += coef * signal
            else:
                rewards[env, pos:] += coef * signal
            if self._ended[env]:  # not auto-reset since: later steps shape with the held s
                self._signal[env] = signal
                if self.use_rel_reward:
                    self.prev_step_reward[env] += coef * signal
        self._patches.clear()
