"""Which GRPO groups of a training step can teach anything: pure torch, no RLinf worker.

GRPO normalises each episode's return by its group's mean and standard deviation. A group whose
returns are all equal gets no gradient; one whose returns differ by a hair (a judge's noise on
a graded score) gets full-size advantages from that hair. So a group counts as having a
gradient when its returns span more than ``MIN_SPAN_OF_COEF`` x ``reward_coef`` (0.5 of
libero_10's 5.0: a 10-point change of a graded score, or any 0/1 verdict that differs).
"""

from __future__ import annotations

import torch

MIN_SPAN_OF_COEF = 0.1


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


def groups_with_gradient(returns: torch.Tensor, group_size: int, reward_coef: float) -> float:
    """The share of groups (consecutive ``group_size`` trajectories) whose returns span enough."""
    if group_size < 1 or returns.numel() % group_size:
        raise ValueError(f"{returns.numel()} trajectories do not split into groups of {group_size}.")
    grouped = returns.reshape(-1, group_size)
    span = grouped.max(dim=1).values - grouped.min(dim=1).values
    return float((span > MIN_SPAN_OF_COEF * abs(reward_coef)).float().mean())
