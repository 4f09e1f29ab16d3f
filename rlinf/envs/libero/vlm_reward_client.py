"""Where the env meets the reward server's client: an episode that ended -> a scoring call.

The client itself (:mod:`vlm_reward.client.scoring`: frames -> MP4 -> ``POST /score``,
replicas, retries and the fallback score that ``reward_model.fallback_score`` configures)
knows nothing of LIBERO or RLinf, so the tools that only score videos (``rescore``, the
audit, the dry run, the benchmarks) import it without RLinf installed. This adaptor is the
env's side: what an ended episode sends (the env's task text, the policy's main images the
core cached, the native success the fallback falls back to).
"""

from __future__ import annotations

from concurrent.futures import Future

from rlinf.envs.libero.episode_reward import Ended
from vlm_reward.client.scoring import Episode, RewardClient, ScoreResult


def submit_ended(client: RewardClient, ended: Ended, task_text: str) -> Future[ScoreResult]:
    """Start scoring ``ended`` under ``task_text`` (the env's instruction for its task) at once.

    The future is the client's (:meth:`RewardClient.submit`): the core collects it when the
    chunk ends, so the call overlaps the rest of the rollout.
    """
    return client.submit(Episode(task_text, ended.frames, ended.native_success))
