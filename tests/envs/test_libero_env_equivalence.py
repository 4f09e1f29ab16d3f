"""With ``reward_model.enable: False`` the project's LiberoEnv is RLinf's LiberoEnv.

Both classes run the same seed and the same (random, seeded) actions over a full short
episode; every output that RLinf's env worker reads must be identical.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from tests.envs.conftest import libero_cfg, libero_env

pytestmark = [pytest.mark.libero, pytest.mark.slow]

NUM_ENVS, MAX_STEPS, CHUNK = 2, 8, 4


def _rollout(env_cls: type | None) -> dict:
    cfg = libero_cfg(max_episode_steps=MAX_STEPS)
    rng = np.random.default_rng(7)
    actions = rng.uniform(-0.5, 0.5, size=(MAX_STEPS // CHUNK, NUM_ENVS, CHUNK, 7)).astype(np.float32)
    with libero_env(cfg, NUM_ENVS, env_cls) as env:
        obs, _ = env.reset()
        chunks = [env.chunk_step(a) for a in actions]
        cache = getattr(env, "_frames", None)
        return {"cls": type(env), "reset_obs": obs, "chunks": chunks, "cache": cache}


@pytest.fixture(scope="module")
def pair() -> tuple[dict, dict]:
    ours = _rollout(None)
    upstream_cls = sys.modules["rlinf.envs.libero._installed_libero_env"].LiberoEnv
    return ours, _rollout(upstream_cls)


def test_the_two_classes_differ(pair) -> None:
    ours, upstream = pair
    assert ours["cls"] is not upstream["cls"] and issubclass(ours["cls"], upstream["cls"])


@pytest.mark.parametrize(
    ("index", "name"), [(1, "rewards"), (2, "terminations"), (3, "truncations")], ids=str
)
def test_step_outputs_identical(pair, index: int, name: str) -> None:
    ours, upstream = pair
    for a, b in zip(ours["chunks"], upstream["chunks"], strict=True):
        assert torch.equal(a[index], b[index]), name


def test_episode_infos_identical(pair) -> None:
    ours, upstream = pair
    for a, b in zip(ours["chunks"], upstream["chunks"], strict=True):
        for info_a, info_b in zip(a[4], b[4], strict=True):
            assert info_a.keys() == info_b.keys()
            assert info_a["episode"].keys() == info_b["episode"].keys()
            for key in info_a["episode"]:
                assert torch.equal(info_a["episode"][key], info_b["episode"][key]), key


def test_observations_identical(pair) -> None:
    ours, upstream = pair
    for key in ("main_images", "wrist_images", "states"):
        assert torch.equal(ours["reset_obs"][key], upstream["reset_obs"][key]), key
        assert torch.equal(ours["chunks"][-1][0][-1][key], upstream["chunks"][-1][0][-1][key]), key
    assert ours["reset_obs"]["task_descriptions"] == upstream["reset_obs"]["task_descriptions"]


def test_the_robot_actually_moved(pair) -> None:
    ours, _ = pair
    start = ours["reset_obs"]["states"][:, :3]
    end = ours["chunks"][-1][0][-1]["states"][:, :3]
    assert (end - start).norm(dim=1).min() > 1e-3, "random actions must move the end effector"


def test_no_frame_cache_when_disabled(pair) -> None:
    ours, _ = pair
    assert ours["cache"] is None
