"""LIBERO env construction for the env tests.

Resets cost 10-40 s on this machine, so tests share one env per module and keep
``max_episode_steps`` small; the one rollout of the project's env at the repo's YAML
(:func:`project_rollout`) is shared by the session: ``test_libero_smoke.py`` reads its layout,
``test_libero_env_equivalence.py`` compares it with RLinf's class.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import DictConfig, OmegaConf

from reward_eval.job.env_config import load_env_config

ENV_CONFIG_DIR = Path(__file__).resolve().parents[2] / "examples" / "embodiment" / "config" / "env"


def libero_cfg(suite: str = "libero_10", **overrides: Any) -> DictConfig:
    """The repo's env YAML for ``suite`` with dotted-key overrides applied (``reward_model.enable=True``)."""
    cfg = load_env_config(ENV_CONFIG_DIR / f"{suite}.yaml")
    for key, value in overrides.items():
        OmegaConf.update(cfg, key, value, force_add=True)
    return cfg


# Resets that reuse the simulator (robosuite's soft reset: the `simulation` block's
# `rebuild_on_reset: False`) for the tests of the reward's wiring: a second or two instead of
# RLinf's 10-40 s rebuild of every env, and nothing they check depends on a rebuild
# (test_libero_env_equivalence.py runs RLinf's rebuilding reset against the project's).
SOFT_RESET = {"simulation.rebuild_on_reset": False}


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


# The seeded rollout's size: 2 envs, one 8-step episode in two chunks of 4.
NUM_ENVS, MAX_STEPS, CHUNK = 2, 8, 4


def seeded_actions() -> np.ndarray:
    """Random deltas in [-0.5, 0.5] (seed 7), shape ``(MAX_STEPS // CHUNK, NUM_ENVS, CHUNK, 7)``:
    they move the arm, and 8 steps of them finish no libero_10 task."""
    rng = np.random.default_rng(7)
    return rng.uniform(-0.5, 0.5, size=(MAX_STEPS // CHUNK, NUM_ENVS, CHUNK, 7)).astype(np.float32)


def seeded_rollout(env_cls: type | None, second_reset: bool) -> dict[str, Any]:
    """libero_10.yaml (reward model off) with ``MAX_STEPS``-step episodes: a reset, the seeded
    actions chunk by chunk to the truncation; with ``second_reset``, the next episode's start too
    (a rebuilt simulator, ~10-40 s here). The env's class, the reset's observation, each
    ``chunk_step``'s output, the frame cache (``None`` when the reward model is off) and the second
    reset's observation (or ``None``)."""
    cfg = libero_cfg(max_episode_steps=MAX_STEPS)
    with libero_env(cfg, NUM_ENVS, env_cls) as env:
        obs, _ = env.reset()
        chunks = [env.chunk_step(a) for a in seeded_actions()]
        cache = getattr(env, "_frames", None)
        second = env.reset()[0] if second_reset else None
        return {"cls": type(env), "reset_obs": obs, "chunks": chunks, "cache": cache, "second_reset": second}


@pytest.fixture(scope="session")
def project_rollout() -> dict[str, Any]:
    """:func:`seeded_rollout` of the project's class with its second reset, once a session."""
    return seeded_rollout(None, second_reset=True)
