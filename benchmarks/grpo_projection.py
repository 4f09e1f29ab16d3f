"""A way of asking for rewards, multiplied out to one GRPO training step at RLinf's libero_10 settings.

RLinf's ``libero_10_grpo_openvlaoft.yaml`` (main at a3816b5) runs 64 train envs for 16 rollout
epochs of 512 steps, actions in chunks of 8: 1,024 episodes of 64 chunk steps per training step.
Given how many requests one episode sends (:func:`benchmarks.rlinf_api_request.requests_per_episode`
for RLinf's history buffer, 1 for this project) and the judge's measured seconds per request at
the sample's concurrency, a step costs ``episodes x requests per episode`` requests and that many
times the seconds of judging.

What it leaves out: how much of that judging the rollout waits for. RLinf's env worker waits
for the rewards at every chunk step; this project's env starts an episode's call when the episode
ends and collects it later (benchmark 8, ``bench_scoring_overlap.py``, measures what a call adds
to a chunk). How much is hidden depends on a GPU rollout's env time per chunk, not measured here.
The judge's throughput is taken as constant: a GPU engine that batches 64 requests better than
the sample's few would make every way of asking cheaper, the one with the most requests the most.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GrpoSettings:
    """A GRPO step's rollout; the defaults are RLinf's libero_10 GRPO config's."""

    envs: int = 64
    rollout_epochs: int = 16
    max_steps: int = 512
    chunk: int = 8

    @property
    def chunk_steps(self) -> int:
        """Chunk steps per episode (a 512-step episode is 64 chunks of 8 actions)."""
        return self.max_steps // self.chunk

    @property
    def episodes(self) -> int:
        """Episodes per training step: every env's, every rollout epoch."""
        return self.envs * self.rollout_epochs


@dataclass(frozen=True)
class StepCost:
    """One training step's reward requests and the judge's seconds for them."""

    requests: int
    judge_s: float


def project(requests_per_episode: int, request_s: float, settings: GrpoSettings = GrpoSettings()) -> StepCost:
    """One step's cost from an episode's requests and the judge's seconds per request;
    ``ValueError`` for a negative count or time."""
    if requests_per_episode < 0 or request_s < 0:
        raise ValueError(
            f"requests per episode and seconds per request must be >= 0, got {requests_per_episode} "
            f"and {request_s}."
        )
    requests = settings.episodes * requests_per_episode
    return StepCost(requests=requests, judge_s=requests * request_s)
