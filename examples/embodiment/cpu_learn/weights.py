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
only the ``--cpu-learn`` actor calls it. Pure torch.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import torch

LOSS_MASK_SUM = "loss_mask_sum"  # RLinf's batch key, set when terminations end episodes


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
