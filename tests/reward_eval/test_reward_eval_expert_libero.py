"""The scripted expert in the real LIBERO simulator, through the project's ``LiberoEnv``.

One env pair from the same initial state (task 0, trial 0): env 0 runs the expert as is,
env 1 the same expert with ``drop="carry"``. The first must reach the simulator's success
within the episode limit; the second must put the first object in the basket and leave the
last one out, so the episode never succeeds.
"""

from __future__ import annotations

import numpy as np
import pytest

from reward_eval.policies.expert import ExpertController
from reward_eval.policies.pick_place import Phase
from tests.envs.conftest import libero_cfg, libero_env

pytestmark = [pytest.mark.libero, pytest.mark.slow]

MAX_STEPS = 400  # the expert needs ~330 steps for two objects here; libero_10 allows 512
CHUNK = 8
SETTLE_CHUNKS = 3  # let a dropped object come to rest before calling the episode


def _in_basket(raw: dict[str, np.ndarray], obj: str) -> bool:
    # The basket's contain region is +-6.1 cm around its centre in x and y.
    return bool(np.abs(raw[f"{obj}_pos"][:2] - raw["basket_1_pos"][:2]).max() < 0.061)


def test_expert_succeeds_and_its_drop_setting_does_not_from_the_same_initial_state() -> None:
    cfg = libero_cfg(max_episode_steps=MAX_STEPS, task_id_filter=[0])
    with libero_env(cfg, num_envs=2) as env:
        env.is_start = False  # keep our reset_state_ids
        env.reset(env_idx=np.arange(2), reset_state_ids=np.array([0, 0]))
        task = env.task_descriptions[0]
        experts = [ExpertController(task, seed=0), ExpertController(task, seed=0, drop="carry")]
        success, steps, settled = np.zeros(2, dtype=bool), 0, 0
        while steps < MAX_STEPS and not (success[0] and settled >= SETTLE_CHUNKS):
            actions = np.stack([e.act(env.current_raw_obs[i], CHUNK) for i, e in enumerate(experts)])
            _, _, terminations, truncations, _ = env.chunk_step(actions)
            success |= terminations.any(dim=1).numpy()
            settled += experts[1].phase is Phase.DONE
            steps += CHUNK
            assert not truncations[0].any(), f"the expert did not succeed within {steps} steps"
        raw = env.current_raw_obs
    assert success[0], "the expert reached the simulator's success"
    assert experts[1].dropping and experts[1].phase is Phase.DONE
    assert not success[1], "dropping the last object is never a success"
    assert _in_basket(raw[1], "alphabet_soup_1") and not _in_basket(raw[1], "tomato_sauce_1"), "a near miss"
    assert _in_basket(raw[0], "alphabet_soup_1") and _in_basket(raw[0], "tomato_sauce_1")
