"""Which GRPO groups of a training step the actor trained on: pure torch, no RLinf worker.

GRPO normalises each episode's return by its group's mean and standard deviation, and RLinf
multiplies the advantages by the loss mask, which its reward filter (``algorithm.filter_rewards``)
zeroes for every group whose mean return is outside ``[rewards_lower_bound, rewards_upper_bound]``.
So a group teaches the policy something exactly when its masked advantages are not all zero:
:func:`groups_with_gradient`, the share of such groups.

:func:`groups_with_spread` is a different question, kept under its own name: whose returns span
more than ``MIN_SPAN_OF_COEF`` x ``reward_coef`` (0.5 of libero_10's 5.0: a 10-point change of a
graded score, or any 0/1 verdict that differs). A group whose returns differ by a hair (a judge's
noise on a graded score) gets full-size advantages from that hair: it has a gradient but no spread.
"""

from __future__ import annotations

import torch

MIN_SPAN_OF_COEF = 0.1
# GRPO divides by the group's std + 1e-6: equal returns whose float sums differ in the last bit
# give advantages of order 1e-2 at most, a real spread of 0.1 x reward_coef gives ~0.7.
ADVANTAGE_ATOL = 0.05


def episode_returns(rewards: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """Each trajectory's return: its rewards summed over the steps the loss counts.

    ``rewards`` and ``loss_mask`` are RLinf's ``[chunk steps, trajectories, actions per chunk]``
    (the mask from ``compute_loss_mask``: up to and including the episode's end step).
    """
    if rewards.shape != loss_mask.shape:
        raise ValueError(
            f"rewards {tuple(rewards.shape)} and loss_mask {tuple(loss_mask.shape)} differ in shape."
        )
    return (rewards.float() * loss_mask.float()).sum(dim=(0, 2))


def _grouped(values: torch.Tensor, group_size: int) -> torch.Tensor:
    if group_size < 1 or values.numel() % group_size:
        raise ValueError(f"{values.numel()} trajectories do not split into groups of {group_size}.")
    return values.reshape(-1, group_size)


def groups_with_gradient(advantages: torch.Tensor, loss_mask: torch.Tensor | None, group_size: int) -> float:
    """The share of groups (consecutive ``group_size`` trajectories) the actor trained on.

    ``advantages`` and ``loss_mask`` (None: every entry counts) are the actor's batch after RLinf's
    reward filter, ``[chunk steps, trajectories, ...]``.
    """
    masked = advantages.float().abs()
    if loss_mask is not None:
        masked = masked * loss_mask.float()
    largest = masked.reshape(masked.shape[0], masked.shape[1], -1).amax(dim=(0, 2))
    return float((_grouped(largest, group_size) > ADVANTAGE_ATOL).any(dim=1).float().mean())


def groups_with_spread(returns: torch.Tensor, group_size: int, reward_coef: float) -> float:
    """The share of groups whose returns span more than ``MIN_SPAN_OF_COEF`` x ``reward_coef``."""
    grouped = _grouped(returns, group_size)
    span = grouped.max(dim=1).values - grouped.min(dim=1).values
    return float((span > MIN_SPAN_OF_COEF * abs(reward_coef)).float().mean())
