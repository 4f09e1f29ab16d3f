"""``infos["episode"]["return"]`` with the VLM reward: the return the episode trained on.

RLinf sums each step's reward into ``return`` as the step runs, but the VLM term is only known
at the end of ``chunk_step``; without the fix ``env/return`` of a VLM run stayed at the step
penalties. One env (2 LIBERO processes, 6-step episodes, chunks of 4) serves the module; the
``recording`` backend answers a known score per request. ``tests/examples/test_training_smoke.py``
checks ``env/return`` of a whole training step with ``use_rel_reward`` (the YAML's default).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch

from tests.envs.conftest import SOFT_RESET, idle_actions, libero_cfg, libero_env
from tests.support.server import ServerProcess
from vlm_reward.client.config import RewardModelConfig

pytestmark = [pytest.mark.libero, pytest.mark.slow]

NUM_ENVS, MAX_STEPS, CHUNK = 2, 6, 4
COEF = 5.0  # reward_coef of libero_10.yaml


@dataclass(frozen=True)
class Built:
    env: Any
    base: RewardModelConfig  # the module's reward_model block, as the env was built with it


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    tmp = tmp_path_factory.mktemp("vlm-return")
    kwargs = json.dumps({"log_path": str(tmp / "calls.jsonl")})
    server = ServerProcess(
        ["--backend", "recording", "--model", "none", "--video-root", str(tmp), "--backend-kwargs", kwargs],
        tmp / "server.log",
        plugins=("tests.support.env_backends",),
    ).wait_ready()
    cfg = libero_cfg(
        max_episode_steps=MAX_STEPS,
        **{
            "reward_model.enable": True,
            "reward_model.endpoint": server.endpoint,
            "reward_model.backend": "recording",
            "reward_model.binary_reward": False,
            "reward_model.temp_video_dir": str(tmp / "videos"),
            "reward_model.episode_log_dir": None,
            **SOFT_RESET,
        },
    )
    try:
        with libero_env(cfg, NUM_ENVS) as env:
            yield Built(env, env.reward_model)
    finally:
        server.stop()


def _episode(
    built: Built, answer: str, use_rel: bool, auto_reset: bool = False, use_for_training: bool = True
):
    """All settings of one episode, then reset and 2 chunks (8 steps: the episode ends at step 6).

    The reward settings go through the env's public ``set_reward_model`` from the module's
    block, and RLinf's two knobs are set every time: no test leans on another's settings.
    """
    env = built.env
    env.set_reward_model(
        built.base.replace(backend_kwargs={"answer": answer}, use_for_training=use_for_training)
    )
    env.use_rel_reward, env.auto_reset = use_rel, auto_reset
    env.reset()
    out = [env.chunk_step(idle_actions(NUM_ENVS, CHUNK)) for _ in range(2)]
    rewards = torch.cat([o[1] for o in out], dim=1).numpy()
    return rewards, [o[4][-1] for o in out]


def test_return_counts_the_vlm_term_once_up_to_the_end_step(built: Built) -> None:
    # Without use_rel_reward the held signal repeats the term on later steps: counted once.
    # (use_rel_reward, the YAML's default, is checked end to end by test_training_smoke.py.)
    rewards, infos = _episode(built, "0.6", use_rel=False)
    # The rewards RLinf's GRPO sums for an episode: its steps up to and including the end step.
    trained_on = rewards[:, :MAX_STEPS].sum(axis=1)
    np.testing.assert_allclose(trained_on, [COEF * 0.6] * NUM_ENVS, atol=1e-6)
    episode = infos[-1]["episode"]
    np.testing.assert_allclose(episode["return"].numpy(), trained_on, atol=1e-6)
    np.testing.assert_allclose(episode["reward"].numpy(), trained_on / MAX_STEPS, atol=1e-6)


def test_return_of_an_auto_reset_episode_is_in_final_info(built: Built) -> None:
    rewards, infos = _episode(built, "0.3", use_rel=True, auto_reset=True)
    final = infos[-1]["final_info"]["episode"]
    np.testing.assert_allclose(final["return"].numpy(), [COEF * 0.3] * NUM_ENVS, atol=1e-6)
    np.testing.assert_allclose(rewards[:, :MAX_STEPS].sum(axis=1), [COEF * 0.3] * NUM_ENVS, atol=1e-6)


def test_shadow_mode_keeps_rlinfs_native_return(built: Built) -> None:
    rewards, infos = _episode(built, "0.9", use_rel=True, use_for_training=False)
    assert np.abs(rewards).sum() == 0, "an idle robot's native reward is 0"
    np.testing.assert_array_equal(infos[-1]["episode"]["return"].numpy(), [0.0, 0.0])
    np.testing.assert_allclose(infos[-1]["episode"]["vlm_score"].numpy(), [0.9, 0.9])
