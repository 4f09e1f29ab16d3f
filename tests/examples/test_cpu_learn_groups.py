"""Which GRPO groups the actor trained on, and which had a spread (cpu_learn/groups.py; milliseconds)."""

from __future__ import annotations

import pytest
import torch

from examples.embodiment.cpu_learn.groups import episode_returns, groups_with_gradient, groups_with_spread


def test_a_return_counts_the_steps_up_to_and_including_the_end() -> None:
    rewards = torch.zeros(3, 2, 2)  # 3 chunk steps, 2 trajectories, 2 actions per chunk
    rewards[1, 0, 1] = 5.0  # trajectory 0 succeeds at its 4th step
    rewards[2, 0, 0] = -5.0  # after its end: not counted
    rewards[2, 1, 1] = 2.3  # trajectory 1's graded score at its last step
    mask = torch.ones(3, 2, 2, dtype=torch.bool)
    mask[2, 0] = False
    assert episode_returns(rewards, mask).tolist() == pytest.approx([5.0, 2.3])


@pytest.mark.parametrize(
    ("returns", "share"),
    [
        ([0, 0, 0, 0, 5, 5, 5, 5], 0.0),  # all fail, all succeed
        ([0, 5, 0, 0, 5, 5, 5, 5], 0.5),
        ([2.30, 2.31, 2.29, 2.30, 0, 5, 5, 5], 0.5),  # judge noise does not count
        ([2.0, 2.6, 2.3, 2.3, 0, 5, 5, 5], 1.0),  # a 12-point graded difference does
    ],
    ids=["none", "one-of-two", "noise", "graded"],
)
def test_a_group_has_a_spread_when_its_returns_span_a_tenth_of_the_coefficient(
    returns: list[float], share: float
) -> None:
    assert groups_with_spread(torch.tensor(returns), group_size=4, reward_coef=5.0) == share


def _advantages(per_trajectory: list[float], steps: int = 3) -> torch.Tensor:
    return torch.tensor(per_trajectory).reshape(1, -1, 1).expand(steps, -1, 2).clone()


@pytest.mark.parametrize(
    ("advantages", "kept_groups", "share"),
    [
        ([0.0] * 4 + [0.0] * 4, (0, 1), 0.0),  # equal returns everywhere
        ([0.9, -0.3, -0.3, -0.3] + [0.0] * 4, (0, 1), 0.5),
        ([0.9, -0.3, -0.3, -0.3, 1.1, -1.1, 0.4, -0.4], (0,), 0.5),  # the filter dropped group 1
        ([0.9, -0.3, -0.3, -0.3, 1.1, -1.1, 0.4, -0.4], (), 0.0),
        ([0.01, -0.01, 0.0, 0.0, 1.1, -1.1, 0.4, -0.4], (0, 1), 0.5),  # float dust is no gradient
    ],
    ids=["none", "one-spread", "one-filtered", "all-filtered", "dust"],
)
def test_a_group_has_a_gradient_when_its_masked_advantages_are_not_all_zero(
    advantages: list[float], kept_groups: tuple[int, ...], share: float
) -> None:
    mask = torch.zeros(3, 8, 2, dtype=torch.bool)
    for group in kept_groups:
        mask[:, 4 * group : 4 * group + 4] = True
    assert groups_with_gradient(_advantages(advantages), mask, group_size=4) == share


def test_without_a_loss_mask_every_entry_counts() -> None:
    assert groups_with_gradient(_advantages([0.0] * 4 + [1.0, -1.0, 0.0, 0.0]), None, 4) == 0.5


def test_a_gradient_late_in_the_episode_counts() -> None:
    advantages = torch.zeros(3, 4, 2)
    advantages[2, 1, 1] = 0.7  # RLinf's advantages are per step; any masked-in step counts
    assert groups_with_gradient(advantages, torch.ones(3, 4, 2, dtype=torch.bool), 2) == 0.5


@pytest.mark.parametrize("measure", ["gradient", "spread"])
def test_trajectories_that_do_not_make_whole_groups_are_refused(measure: str) -> None:
    with pytest.raises(ValueError, match="5 trajectories do not split into groups of 4"):
        if measure == "spread":
            groups_with_spread(torch.zeros(5), 4, 5.0)
        else:
            groups_with_gradient(torch.zeros(1, 5, 1), None, 4)
