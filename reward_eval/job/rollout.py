"""The episodes of ``run``: played through the project's ``LiberoEnv`` with a policy, counted on a bar.

The env scores every episode itself, once, at its end (as in training) and writes its JSONL
line; this module only resets the envs to the planned initial states, asks the policy for
each chunk of actions, steps until every env of a batch has ended, and keeps the tally the
progress bar shows: native successes, and the VLM's successes among the episodes it judged.
An episode whose scoring call failed got the fallback score (by default its native
success), not a verdict, so it is counted as a fallback and never as a VLM success.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from omegaconf import DictConfig

from reward_eval.job.quiet import dropping_stdout_lines
from reward_eval.policies import ACTION_DIM, Policy
from reward_eval.progress_bar import progress_bar


@dataclass
class Tally:
    """Outcomes of the episodes played so far, as the progress bar shows them."""

    done: int = 0
    native: int = 0  # native successes, all episodes
    judged: int = 0  # episodes the VLM judged (no fallback)
    vlm: int = 0  # VLM successes among the judged episodes
    fallback: int = 0  # episodes that got the fallback score

    def add(self, metrics: Mapping[str, np.ndarray]) -> None:
        """Count one batch's episode metrics (``native_success``, ``vlm_success``, ``vlm_fallback``)."""
        native = np.asarray(metrics["native_success"], dtype=bool)
        fallback = np.asarray(metrics["vlm_fallback"], dtype=bool)
        vlm = np.asarray(metrics["vlm_success"], dtype=bool)
        if not native.shape == fallback.shape == vlm.shape:
            raise ValueError(
                f"episode metrics differ in shape: native_success {native.shape}, "
                f"vlm_success {vlm.shape}, vlm_fallback {fallback.shape}."
            )
        self.done += native.size
        self.native += int(native.sum())
        self.fallback += int(fallback.sum())
        self.judged += int((~fallback).sum())
        self.vlm += int((vlm & ~fallback).sum())

    def postfix(self) -> dict[str, str]:
        """``native=S/N``, ``vlm=S/J`` (J: the judged episodes) and ``fallback=F``, for the progress bar."""
        return {
            "native": f"{self.native}/{self.done}",
            "vlm": f"{self.vlm}/{self.judged}",
            "fallback": str(self.fallback),
        }


def checked_actions(policy: Policy, actions: Any, num_envs: int, chunk: int) -> np.ndarray:
    """The policy's actions as float32 ``(num_envs, chunk, 7)``; a wrong shape names the policy."""
    actions = np.asarray(actions, dtype=np.float32)
    if actions.shape != (num_envs, chunk, ACTION_DIM):
        raise ValueError(
            f"policy {policy.name!r} returned actions of shape {actions.shape}; "
            f"expected {(num_envs, chunk, ACTION_DIM)}."
        )
    return actions


def run_batch(env: Any, policy: Policy, reset_ids: Sequence[int], chunk: int) -> dict[str, np.ndarray]:
    """Play one episode per id on envs ``0..len(reset_ids)-1`` until all of them have ended.

    The policy gets the env and the observation of every reset and step (``policy.reset``
    after the reset, ``policy.act`` before each ``chunk_step``). Envs beyond
    ``len(reset_ids)`` (a last, partial batch) keep stepping but are not reset, so their
    ended episode is not scored again. Returns the episode metrics of the played envs
    (``native_success``, ``vlm_success``, ``vlm_fallback``, ...) after the last ``chunk_step``.
    """
    n = len(reset_ids)
    obs, _ = env.reset(env_idx=np.arange(n), reset_state_ids=np.asarray(reset_ids))
    policy.reset(env, obs)
    ended = np.zeros(n, dtype=bool)
    while not ended.all():
        actions = checked_actions(policy, policy.act(env, obs, chunk), env.num_envs, chunk)
        obs_list, _, terminations, truncations, infos_list = env.chunk_step(actions)
        obs = obs_list[-1]
        ended |= (terminations | truncations).any(dim=1).cpu().numpy()[:n]
    episode = infos_list[-1]["episode"]
    return {key: np.asarray(value)[:n] for key, value in episode.items()}


def rollout(env: Any, policy: Policy, reset_ids: Sequence[int], chunk: int) -> Tally:
    """All episodes, ``env.num_envs`` at a time, with a progress bar of the :class:`Tally`; returns it."""
    tally = Tally()
    with progress_bar(len(reset_ids), "episodes", "episode", postfix=tally.postfix()) as bar:
        for start in range(0, len(reset_ids), env.num_envs):
            batch = reset_ids[start : start + env.num_envs]
            tally.add(run_batch(env, policy, batch, chunk))
            bar.set_postfix(tally.postfix(), refresh=False)
            bar.update(len(batch))
    return tally


def make_env(cfg: DictConfig, num_envs: int) -> Any:
    """The project's LiberoEnv, ready for explicit ``reset_state_ids`` on its first reset."""
    from rlinf.envs import get_env_cls

    with dropping_stdout_lines():  # LIBERO prints its task order
        env = get_env_cls("libero")(
            cfg, num_envs=num_envs, seed_offset=0, total_num_processes=1, worker_info=None
        )
    env.is_start = False  # RLinf's first reset would replace our reset_state_ids with its own
    return env
