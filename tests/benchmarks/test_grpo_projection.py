"""benchmarks.grpo_projection: a way of asking for rewards, per GRPO step at RLinf's libero_10 settings."""

from __future__ import annotations

import pytest

from benchmarks.grpo_projection import GrpoSettings, project
from benchmarks.rlinf_api_request import PER_CHUNK, per_episode, requests_per_episode


def test_rlinf_s_libero_10_settings() -> None:
    # libero_10_grpo_openvlaoft.yaml: 64 envs, 16 rollout epochs, 512 steps; chunks of 8 actions.
    settings = GrpoSettings()
    assert (settings.chunk_steps, settings.episodes) == (64, 1_024)


@pytest.mark.parametrize(
    ("per_episode_requests", "requests"),
    [
        (requests_per_episode(PER_CHUNK, 64), 61_440),  # 60 an episode: nothing below 5 chunk ends
        (requests_per_episode(per_episode(64), 64), 1_024),
        (1, 1_024),  # this project: one call per episode end
    ],
    ids=["rlinf-per-chunk", "rlinf-per-episode", "this-project"],
)
def test_requests_per_step(per_episode_requests: int, requests: int) -> None:
    cost = project(per_episode_requests, request_s=0.5)
    assert cost.requests == requests
    assert cost.judge_s == pytest.approx(requests * 0.5)


def test_other_settings_scale_the_step() -> None:
    settings = GrpoSettings(envs=3, rollout_epochs=2, max_steps=32, chunk=8)
    assert settings.chunk_steps == 4
    assert project(4, request_s=0.25, settings=settings) == project(
        24, request_s=0.25, settings=GrpoSettings(1, 1)
    )


@pytest.mark.parametrize(
    ("count", "request_s"), [(-1, 0.1), (1, -1.0)], ids=["negative-count", "negative-time"]
)
def test_bad_input_is_refused(count: int, request_s: float) -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        project(count, request_s)
