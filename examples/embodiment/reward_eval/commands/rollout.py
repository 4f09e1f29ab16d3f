"""The episodes of ``run``: played through the project's ``LiberoEnv`` with a policy, counted on a bar.

The env scores every episode itself, once, at its end (as in training) and writes its JSONL
line; this module only resets the envs to the planned initial states, asks the policy for
each chunk of actions, steps until every env of a batch has ended, and shows the native and
VLM successes so far on a progress bar.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from omegaconf import DictConfig
from tqdm import tqdm

from examples.embodiment.reward_eval.policies import ACTION_DIM, Policy


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
    (``native_success``, ``vlm_success``, ...) after the last ``chunk_step``.
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


def rollout(env: Any, policy: Policy, reset_ids: Sequence[int], chunk: int) -> None:
    """All episodes, ``env.num_envs`` at a time, with a progress bar of native / VLM successes."""
    native = vlm = done = 0
    with tqdm(total=len(reset_ids), unit="episode", desc="episodes", file=sys.stderr) as bar:
        bar.set_postfix(native="0/0", vlm="0/0")
        for start in range(0, len(reset_ids), env.num_envs):
            batch = reset_ids[start : start + env.num_envs]
            metrics = run_batch(env, policy, batch, chunk)
            done += len(batch)
            native += int(metrics["native_success"].sum())
            vlm += int(metrics["vlm_success"].sum())
            bar.update(len(batch))
            bar.set_postfix(native=f"{native}/{done}", vlm=f"{vlm}/{done}")


def make_env(cfg: DictConfig, num_envs: int) -> Any:
    """The project's LiberoEnv, ready for explicit ``reset_state_ids`` on its first reset."""
    from rlinf.envs import get_env_cls

    env = get_env_cls("libero")(
        cfg, num_envs=num_envs, seed_offset=0, total_num_processes=1, worker_info=None
    )
    env.is_start = False  # RLinf's first reset would replace our reset_state_ids with its own
    return env
