"""A reward request shape's cost projected onto one GRPO training step at RLinf's libero_10 settings.

Measured per-request judge seconds (at the concurrency the sample sent them with) are multiplied
out to one training step: RLinf's libero_10 GRPO runs 64 envs for 16 rollout epochs of at most
512 steps in chunks of 8 actions, so a step has 64 x 16 x 64 chunk steps. Two ways of asking:

- ``per chunk``: one request per env per chunk step, the env waiting for the rewards at every
  chunk step (RLinf's API reward worker): every chunk step's judging adds to the rollout;
- ``per episode``: one request per episode end, sent while the rest of the chunk runs (this
  project): the episodes of a fixed horizon all end at the last chunk, so what is exposed is that
  last burst's judging less the overlap (none is assumed unless given).

The exposed reward time is the last reward's completion minus the time the last env step would
have completed with no reward at all, so it is what rewards add to a rollout; its share is taken
over the rollout's env time (chunk steps x ``chunk_s``). The judge's throughput is taken as
constant: a GPU engine that batches 64 requests better than the sample's few would make both
shapes cheaper, the per-chunk shape (64x the requests) the more.
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
        """Chunk steps per rollout epoch (a 512-step episode is 64 chunks of 8 actions)."""
        return self.max_steps // self.chunk

    def requests(self, shape: str) -> int:
        """Requests per training step: per env per chunk step, or per episode end."""
        episodes = self.envs * self.rollout_epochs
        return episodes * self.chunk_steps if shape == PER_CHUNK else episodes


PER_CHUNK, PER_EPISODE = "per chunk", "per episode"
SHAPES = (PER_CHUNK, PER_EPISODE)


@dataclass(frozen=True)
class StepCost:
    """One training step's reward cost under one request shape."""

    requests: int
    judge_s: float
    exposed_s: float
    rollout_s: float

    @property
    def exposed_share(self) -> float:
        """Exposed reward time over the rollout's env time."""
        return self.exposed_s / self.rollout_s


def project(
    shape: str,
    request_s: float,
    chunk_s: float,
    settings: GrpoSettings = GrpoSettings(),
    overlap_s: float = 0.0,
) -> StepCost:
    """One step's cost for ``shape`` from ``request_s``, the judge's seconds per request at the
    measured concurrency; ``ValueError`` for an unknown shape or a negative time."""
    if shape not in SHAPES:
        raise ValueError(f"unknown request shape {shape!r}; choose one of {', '.join(SHAPES)}.")
    if min(request_s, chunk_s, overlap_s) < 0:
        raise ValueError(
            f"times must be >= 0, got request {request_s}, chunk {chunk_s}, overlap {overlap_s}."
        )
    burst_s = settings.envs * request_s  # every env's request of one chunk step (or episode end)
    per_epoch = settings.chunk_steps * burst_s if shape == PER_CHUNK else max(0.0, burst_s - overlap_s)
    return StepCost(
        requests=settings.requests(shape),
        judge_s=settings.requests(shape) * request_s,
        exposed_s=settings.rollout_epochs * per_epoch,
        rollout_s=settings.rollout_epochs * settings.chunk_steps * chunk_s,
    )
