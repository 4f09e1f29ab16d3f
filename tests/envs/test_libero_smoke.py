"""The real LIBERO simulator through the project's LiberoEnv: libero_10, 2 envs, 256x256.

The rollout is the session's (``project_rollout`` in ``tests/envs/conftest.py``: one reset, the
seeded random actions in chunks until the episode is truncated), which
``test_libero_env_equivalence.py`` also compares with RLinf's class: one simulator run for both.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.envs.conftest import MAX_STEPS, NUM_ENVS

pytestmark = [pytest.mark.libero, pytest.mark.slow]


@pytest.fixture(scope="module")
def rollout(project_rollout: dict) -> dict:
    return project_rollout


def test_env_is_the_project_class(rollout: dict) -> None:
    assert rollout["cls"].__module__ == "rlinf.envs.libero.libero_env"


@pytest.mark.parametrize(
    ("key", "shape", "dtype"),
    [
        ("main_images", (NUM_ENVS, 256, 256, 3), torch.uint8),
        ("wrist_images", (NUM_ENVS, 256, 256, 3), torch.uint8),
        ("states", (NUM_ENVS, 8), torch.float32),
    ],
    ids=["main_images", "wrist_images", "states"],
)
def test_observation_layout(rollout: dict, key: str, shape: tuple, dtype: torch.dtype) -> None:
    for obs in [rollout["reset_obs"], *(c[0][-1] for c in rollout["chunks"])]:
        assert obs[key].shape == shape
        assert obs[key].dtype == dtype


def test_task_descriptions_are_libero_10_tasks(rollout: dict) -> None:
    descriptions = rollout["reset_obs"]["task_descriptions"]
    assert len(descriptions) == NUM_ENVS
    assert all(isinstance(d, str) and len(d.split()) >= 3 for d in descriptions)


def test_truncation_exactly_at_max_episode_steps(rollout: dict) -> None:
    truncations = torch.cat([c[3] for c in rollout["chunks"]], dim=1)
    assert truncations.shape == (NUM_ENVS, MAX_STEPS)
    expected = torch.zeros_like(truncations)
    expected[:, MAX_STEPS - 1] = True
    assert torch.equal(truncations, expected)


def test_a_robot_that_does_not_do_the_task_earns_no_reward_and_does_not_terminate(rollout: dict) -> None:
    """The seeded actions move the arm (``test_the_robot_actually_moved``) and finish no task."""
    rewards = torch.cat([c[1] for c in rollout["chunks"]], dim=1)
    terminations = torch.cat([c[2] for c in rollout["chunks"]], dim=1)
    assert torch.count_nonzero(rewards) == 0
    assert not terminations.any()


def test_main_images_are_rendered_scenes(rollout: dict) -> None:
    images = rollout["reset_obs"]["main_images"].numpy().astype(np.float32)
    for image in images:
        assert image.std() > 20, "a constant or nearly constant image is not a rendered scene"
        # A tabletop scene has many distinct colours; a failed render has a handful.
        assert len(np.unique(image.reshape(-1, 3), axis=0)) > 1000
    assert not np.array_equal(images[0], images[1]), "two different tasks rendered the same image"
