"""What a learning run did, step by step (reward_eval/analysis/learning.py; pure, milliseconds)."""

from __future__ import annotations

import numpy as np
import pytest

from reward_eval.analysis.learning import (
    first_step_at,
    judge_rates,
    learning_steps,
    parameters,
)


def _rates(native: list[bool], judged: list[bool]) -> tuple[float | None, float | None]:
    n, v = np.array(native), np.array(judged)
    return judge_rates(v.mean(), n.mean(), (v == n).mean(), len(n))


@pytest.mark.parametrize(
    ("native", "judged", "fpr", "recall"),
    [
        ([1, 1, 0, 0, 0, 0, 0, 0], [1, 0, 1, 1, 0, 0, 0, 0], 2 / 6, 1 / 2),
        ([1, 1, 0, 0], [1, 1, 1, 1], 1.0, 1.0),  # a judge that says yes to everything
        ([0, 0, 0, 0], [1, 0, 0, 0], 1 / 4, None),  # no success behind a recall
        ([1, 1, 1, 1], [1, 0, 1, 1], None, 3 / 4),  # no failure behind a false-positive rate
    ],
    ids=["mixed", "always-yes", "no-successes", "no-failures"],
)
def test_rates_from_three_means_are_the_counted_ones(native, judged, fpr, recall) -> None:
    got = _rates([bool(x) for x in native], [bool(x) for x in judged])
    assert got == (pytest.approx(fpr) if fpr is not None else None, pytest.approx(recall) if recall else None)


SCALARS = {
    "env/success_once": {0: 0.25, 1: 0.5},
    "env/num_trajectories": {0: 16.0, 1: 16.0},
    "env/vlm_success": {0: 0.5, 1: 0.5625},
    "env/native_success": {0: 0.25, 1: 0.5},
    "env/vlm_native_agree": {0: 0.75, 1: 0.9375},
    "rollout/groups_with_gradient": {0: 1.0, 1: 0.5},
    "rollout/policy/mean_0_x": {0: 0.0, 1: 0.001},
    "rollout/policy/mean_0_y": {0: -0.06, 1: -0.055},
    "rollout/policy/mean_1_x": {0: 0.0, 1: 0.002},
    "rollout/policy/mean_1_y": {0: 0.065, 1: 0.058},
    "rollout/policy/std_0_x": {0: 0.015, 1: 0.015},
    "rollout/policy/std_0_y": {0: 0.015, 1: 0.015},
    "rollout/policy/std_1_x": {0: 0.015, 1: 0.015},
    "rollout/policy/std_1_y": {0: 0.015, 1: 0.014},
}


def test_a_step_record_per_logged_step_counted_from_one() -> None:
    steps = learning_steps(SCALARS)
    assert [s["step"] for s in steps] == [1, 2]
    first = steps[0]
    assert (first["episodes"], first["success_rate"], first["judged_success_rate"]) == (16, 0.25, 0.5)
    assert first["false_positive_rate"] == pytest.approx(4 / 12) and first["recall"] == pytest.approx(1.0)
    assert steps[1]["parameters"] == {
        "mean": [[0.001, -0.055], [0.002, 0.058]],
        "std": [[0.015, 0.015], [0.015, 0.014]],
    }
    assert parameters(SCALARS, 7) == {}


def test_a_run_without_a_judge_has_no_judge_rates_and_a_log_dir_without_success_is_refused() -> None:
    native = {
        key: value
        for key, value in SCALARS.items()
        if not key.startswith("env/vlm") and "native_success" not in key
    }
    step = learning_steps(native)[0]
    assert step["judged_success_rate"] is step["false_positive_rate"] is step["recall"] is None
    with pytest.raises(ValueError, match="the run logged no 'env/success_once'"):
        learning_steps({"rollout/groups_with_gradient": {0: 1.0}})


def test_the_first_step_at_a_rate() -> None:
    steps = [{"step": k + 1, "success_rate": r} for k, r in enumerate((0.1, 0.4, 0.55, 0.5))]
    assert first_step_at(steps, 0.5) == 3 and first_step_at(steps, 0.6) is None
