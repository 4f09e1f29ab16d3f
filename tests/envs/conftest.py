"""LIBERO env construction for the env tests.

Resets cost 10-40 s on this machine, so tests share one env per module and keep
``max_episode_steps`` small.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from reward_eval.job.env_config import load_env_config

ENV_CONFIG_DIR = Path(__file__).resolve().parents[2] / "examples" / "embodiment" / "config" / "env"


def libero_cfg(suite: str = "libero_10", **overrides: Any) -> DictConfig:
    """The repo's env YAML for ``suite`` with dotted-key overrides applied (``reward_model.enable=True``)."""
    cfg = load_env_config(ENV_CONFIG_DIR / f"{suite}.yaml")
    for key, value in overrides.items():
        OmegaConf.update(cfg, key, value, force_add=True)
    return cfg


@contextmanager
def libero_env(
    cfg: DictConfig, num_envs: int = 2, env_cls: type | None = None, **placement: Any
) -> Iterator[Any]:
    """Build a LiberoEnv (the project's unless ``env_cls`` is given) and close its processes after.

    ``placement`` overrides RLinf's ``seed_offset`` (0), ``total_num_processes`` (1) and
    ``worker_info`` (None: built outside an env worker).
    """
    if env_cls is None:
        from rlinf.envs import get_env_cls

        env_cls = get_env_cls("libero")
    where = {"seed_offset": 0, "total_num_processes": 1, "worker_info": None, **placement}
    env = env_cls(cfg, num_envs=num_envs, **where)
    try:
        yield env
    finally:
        env.close()  # the project's class releases its reward client; RLinf's is a no-op
        env.env.close()


def idle_actions(num_envs: int, chunk: int) -> np.ndarray:
    """Zero deltas with the gripper held open (-1), shape ``(num_envs, chunk, 7)``."""
    actions = np.zeros((num_envs, chunk, 7), dtype=np.float32)
    actions[..., -1] = -1.0
    return actions


def cached_frame_counts(env: Any) -> list[int]:
    """How many frames each env of the project's LiberoEnv holds for its running episode (its
    private episode-reward core: a white-box check that a reset keeps only the new episode's)."""
    return [len(frames) for frames in env._rewards.frames]
