"""Which GRPO groups can teach anything (examples/embodiment/cpu_learn/groups.py; milliseconds)."""

from __future__ import annotations

import pytest
import torch

from examples.embodiment.cpu_learn.groups import episode_returns, groups_with_gradient


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
def test_a_group_has_a_gradient_when_its_returns_span_a_tenth_of_the_coefficient(
    returns: list[float], share: float
) -> None:
    assert groups_with_gradient(torch.tensor(returns), group_size=4, reward_coef=5.0) == share


def test_returns_that_do_not_make_whole_groups_are_refused() -> None:
    with pytest.raises(ValueError, match="5 trajectories do not split into groups of 4"):
        groups_with_gradient(torch.zeros(5), 4, 5.0)
