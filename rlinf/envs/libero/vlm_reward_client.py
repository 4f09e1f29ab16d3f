"""The VLM reward client, at the env package's original path.

The client itself lives in :mod:`vlm_reward.client` so that the tools which only score
videos (``rescore``, the audit, the dry run, the benchmarks) need no RLinf. This module keeps
the path the fork's design named for it (``rlinf.envs.libero.vlm_reward_client``): what the
env uses to score an episode that ended is importable from beside the env. ``LiberoEnv``
builds a :class:`RewardClient` from its ``reward_model`` block and submits each ended episode
as a :class:`FinishedEpisode`.
"""

from __future__ import annotations

from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.http import RewardAuthError, RewardRequestError
from vlm_reward.client.scoring import FinishedEpisode, RewardClient, ScoreResult

__all__ = [
    "FinishedEpisode",
    "RewardAuthError",
    "RewardClient",
    "RewardModelConfig",
    "RewardRequestError",
    "ScoreResult",
]
