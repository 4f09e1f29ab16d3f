"""Each trajectory's weight in RLinf's embodied loss, made independent of its length for this policy.

RLinf 0.3's actor divides every entry of a trajectory's loss by ``loss_mask_sum / max_episode_steps``
(``masked_mean_ratio``), ``loss_mask_sum`` being the trajectory's length ``L`` in steps. For
OpenVLA-OFT, whose log-probabilities cover all ``L`` steps, the ``L`` entries then add up to the same
total whatever ``L`` is. The release policy (:mod:`.policy`) has its whole log-probability in one
place, its first chunk, so the same division weighs a trajectory ``max_episode_steps / L``; and ``L``
ends at the simulator's success (LIBERO terminates there), so in a judged run the simulator's
success would reach the update through the weight: a 270-step success weighs 1.5x a 400-step
failure, whatever the judge said.

:func:`equal_trajectory_weights` gives every trajectory the ratio 1 instead (``loss_mask_sum =
max_episode_steps``), the same total weight OFT's trajectories get, without touching RLinf's loss:
only the ``--cpu-learn`` actor calls it.

:func:`per_step_loss_mask` mends RLinf 0.3's reward filter for batches without a mask from
terminations (``ignore_terminations`` or ``auto_reset``: judge-only runs): the filter then makes the
loss mask itself, one entry per chunk (``[chunks, batch, 1]``), and RLinf's advantage code reshapes
an action-level reward's mask as the rewards (``[chunks, batch, steps per chunk]``) and fails. With a
mask from terminations the filter's entry is broadcast over the chunk's steps, which is what the
mend does too. Pure torch.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import torch

LOSS_MASK_SUM = "loss_mask_sum"  # RLinf's batch key, set when terminations end episodes
LOSS_MASK = "loss_mask"  # RLinf's batch key: which steps count, after the reward filter


def equal_trajectory_weights(
    batch: MutableMapping[str, Any], max_episode_steps: int
) -> MutableMapping[str, Any]:
    """``batch`` with every trajectory's ``loss_mask_sum`` set to ``max_episode_steps`` (in place).

    A batch without ``loss_mask_sum`` (RLinf sets none with ``ignore_terminations`` or
    ``auto_reset``: its loss is then a plain masked mean, equal weights already) is returned as it is.
    The loss mask itself (which steps count, which groups the reward filter dropped) is unchanged.
    """
    if isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, int) or max_episode_steps < 1:
        raise ValueError(f"max_episode_steps must be a positive int, got {max_episode_steps!r}.")
    lengths = batch.get(LOSS_MASK_SUM)
    if lengths is not None:
        batch[LOSS_MASK_SUM] = torch.full_like(lengths, max_episode_steps)
    return batch


def per_step_loss_mask(batch: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """``batch`` with a per-chunk loss mask (``[chunks, batch, 1]``) broadcast to the rewards' shape
    (in place): the chunk's entry for each of its steps.

    A batch whose mask already has the rewards' shape, or that has no mask, is returned as it is;
    ValueError for a mask that is neither per chunk nor per step.
    """
    mask, rewards = batch.get(LOSS_MASK), batch["rewards"]
    if mask is None or mask.shape == rewards.shape:
        return batch
    if mask.shape != (*rewards.shape[:-1], 1):
        raise ValueError(
            f"loss_mask of shape {tuple(mask.shape)} fits neither the rewards' {tuple(rewards.shape)} "
            "nor one entry per chunk."
        )
    batch[LOSS_MASK] = mask.expand(rewards.shape).contiguous()
    return batch
