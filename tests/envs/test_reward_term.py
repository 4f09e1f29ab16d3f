"""The VLM term of one scored episode: the success signal, its metrics, the window's correction."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from rlinf.envs.libero.reward_term import (
    VLM_METRIC_KEYS,
    Shaping,
    end_step_correction,
    episode_metrics,
    success_signal,
)

COEF = 5.0


def _settings(binary: bool = True, threshold: float = 0.5) -> SimpleNamespace:
    return SimpleNamespace(binary_reward=binary, success_threshold=threshold, use_for_training=True)


def _result(score: float, fallback: bool = False) -> SimpleNamespace:
    return SimpleNamespace(score=score, fallback=fallback, latency_s=0.25, failovers=1)


SIGNALS = [
    ("binary_above", True, 0.7, 1.0),
    ("binary_at_threshold", True, 0.5, 1.0),
    ("binary_below", True, 0.49, 0.0),
    ("continuous", False, 0.49, 0.49),
]


@pytest.mark.parametrize(("binary", "score", "signal"), [s[1:] for s in SIGNALS], ids=[s[0] for s in SIGNALS])
def test_success_signal(binary: bool, score: float, signal: float) -> None:
    assert success_signal(score, _settings(binary=binary)) == signal


def test_episode_metrics_of_a_fallback_that_disagrees() -> None:
    metrics = episode_metrics(_result(0.0, fallback=True), True, _settings())
    assert tuple(metrics) == VLM_METRIC_KEYS
    assert metrics == {
        "vlm_scored": 1.0,
        "vlm_score": 0.0,
        "vlm_success": 0.0,
        "native_success": 1.0,
        "vlm_native_agree": 0.0,
        "vlm_fallback": 1.0,
        "vlm_latency_s": 0.25,
        "vlm_failovers": 1.0,
    }


CORRECTIONS = [
    ("rel_at_position", 1.0, 2, 4, True, [0, 0, 5, 0]),
    ("abs_from_position_on", 1.0, 2, 4, False, [0, 0, 5, 5]),
    ("abs_continuous_first", 0.4, 0, 3, False, [2, 2, 2]),
    ("rel_zero_signal", 0.0, 3, 4, True, [0, 0, 0, 0]),
]


@pytest.mark.parametrize(
    ("signal", "position", "width", "rel", "row"),
    [c[1:] for c in CORRECTIONS],
    ids=[c[0] for c in CORRECTIONS],
)
def test_end_step_correction(signal: float, position: int, width: int, rel: bool, row: list[float]) -> None:
    np.testing.assert_allclose(end_step_correction(signal, position, width, Shaping(COEF, rel)), row)


@pytest.mark.parametrize("position", [-1, 4], ids=["negative", "past_the_window"])
def test_end_step_correction_rejects_a_position_outside_the_window(position: int) -> None:
    with pytest.raises(ValueError, match=rf"position must be in \[0, 4\).*got {position}"):
        end_step_correction(1.0, position, 4, Shaping(COEF, True))
