"""benchmarks.grpo_projection: a request shape's cost per GRPO step at RLinf's libero_10 settings."""

from __future__ import annotations

import pytest

from benchmarks.grpo_projection import PER_CHUNK, PER_EPISODE, GrpoSettings, project


def test_rlinf_s_libero_10_settings_give_the_request_counts_of_the_issue() -> None:
    settings = GrpoSettings()
    assert settings.chunk_steps == 64
    assert (settings.requests(PER_CHUNK), settings.requests(PER_EPISODE)) == (65_536, 1_024)


@pytest.mark.parametrize(
    ("shape", "overlap_s", "exposed_s"),
    [
        (PER_CHUNK, 0.0, 2 * 4 * (3 * 0.5)),  # epochs x chunk steps x (envs x request): every wait
        (PER_EPISODE, 0.0, 2 * (3 * 0.5)),  # epochs x the last burst
        (PER_EPISODE, 1.0, 2 * (3 * 0.5 - 1.0)),  # less the overlap
        (PER_EPISODE, 5.0, 0.0),  # hidden entirely
    ],
    ids=["per-chunk", "per-episode", "per-episode-overlapped", "per-episode-hidden"],
)
def test_the_exposed_time_is_what_rewards_add_to_the_rollout(
    shape: str, overlap_s: float, exposed_s: float
) -> None:
    settings = GrpoSettings(envs=3, rollout_epochs=2, max_steps=32, chunk=8)
    cost = project(shape, request_s=0.5, chunk_s=2.0, settings=settings, overlap_s=overlap_s)
    assert cost.exposed_s == pytest.approx(exposed_s)
    assert cost.rollout_s == pytest.approx(2 * 4 * 2.0)
    assert cost.judge_s == pytest.approx(settings.requests(shape) * 0.5)
    assert cost.exposed_share == pytest.approx(exposed_s / 16.0)


@pytest.mark.parametrize(
    ("shape", "request_s", "message"),
    [("per step", 0.1, "unknown request shape"), (PER_CHUNK, -1.0, "times must be >= 0")],
    ids=["unknown-shape", "negative-time"],
)
def test_bad_input_is_refused(shape: str, request_s: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        project(shape, request_s, chunk_s=1.0)
