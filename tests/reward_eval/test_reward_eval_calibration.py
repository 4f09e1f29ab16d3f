"""Tests for reward_eval.analysis.calibration: ROC, best thresholds, Brier, reliability, by hand.

Every expected value was worked out by hand from the row's scores and labels; the comments
show the sweep (threshold: tp, fp) it comes from. Thresholds are the observed scores, a
threshold t predicts success for score >= t, and ties pick the largest threshold.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reward_eval.analysis.calibration import (
    auroc_interval,
    best_f1,
    best_youden,
    brier,
    calibration,
    expected_calibration_error,
    reliability_bins,
    roc_area,
    roc_curve,
)
from reward_eval.analysis.metrics import auroc, summarize

# (id, scores, labels, roc, auroc, best_f1, best_youden, brier)
CASES = [
    (
        # .8: tp1 fp0 | .4: tp1 fp1 | .35: tp2 fp1 | .1: tp2 fp2
        # F1 2/3, 1/2, 4/5, 2/3 -> .35; J 1/2, 0, 1/2, 0 -> tie .8 vs .35, the larger wins
        "one-swap-youden-tie",
        [0.1, 0.4, 0.35, 0.8],
        [0, 0, 1, 1],
        [[0.0, 0.5, 0.8], [0.5, 0.5, 0.4], [0.5, 1.0, 0.35], [1.0, 1.0, 0.1]],
        0.75,
        {"threshold": 0.35, "f1": 0.8, "precision": 2 / 3, "recall": 1.0},
        {"threshold": 0.8, "j": 0.5, "tpr": 0.5, "fpr": 0.0},
        (0.01 + 0.16 + 0.4225 + 0.04) / 4,
    ),
    (
        # .9: tp1 fp0 fn1 -> F1 2/3 | .5: 1/2 | .4: 2/5 | .3: tp2 fp2 -> 4/6 = 2/3: tie, .9 wins
        "f1-tie-picks-the-larger-threshold",
        [0.9, 0.5, 0.4, 0.3],
        [1, 0, 0, 1],
        [[0.0, 0.5, 0.9], [0.5, 0.5, 0.5], [1.0, 0.5, 0.4], [1.0, 1.0, 0.3]],
        0.5,
        {"threshold": 0.9, "f1": 2 / 3, "precision": 1.0, "recall": 0.5},
        {"threshold": 0.9, "j": 0.5, "tpr": 0.5, "fpr": 0.0},
        (0.01 + 0.25 + 0.16 + 0.49) / 4,
    ),
    (
        "perfect",
        [0.2, 0.9],
        [0, 1],
        [[0.0, 1.0, 0.9], [1.0, 1.0, 0.2]],
        1.0,
        {"threshold": 0.9, "f1": 1.0, "precision": 1.0, "recall": 1.0},
        {"threshold": 0.9, "j": 1.0, "tpr": 1.0, "fpr": 0.0},
        (0.04 + 0.01) / 2,
    ),
    (
        # .9: tp0 fp1 -> F1 0, J -1 | .2: tp1 fp1 -> F1 2/3, J 0: no threshold beats chance
        "inverted",
        [0.9, 0.2],
        [0, 1],
        [[1.0, 0.0, 0.9], [1.0, 1.0, 0.2]],
        0.0,
        {"threshold": 0.2, "f1": 2 / 3, "precision": 0.5, "recall": 1.0},
        {"threshold": 0.2, "j": 0.0, "tpr": 1.0, "fpr": 1.0},
        (0.81 + 0.64) / 2,
    ),
    (
        "constant-scores",
        [0.5, 0.5, 0.5, 0.5],
        [0, 1, 0, 1],
        [[1.0, 1.0, 0.5]],
        0.5,
        {"threshold": 0.5, "f1": 2 / 3, "precision": 0.5, "recall": 1.0},
        {"threshold": 0.5, "j": 0.0, "tpr": 1.0, "fpr": 1.0},
        0.25,
    ),
    (
        # .9: tp1 fp0 | .5: tp2 fp1 | .2: tp2 fp2; J .5, .5, 0: tie, .9 wins; F1 2/3, 4/5, 2/3
        "tie-across-classes",
        [0.5, 0.5, 0.2, 0.9],
        [1, 0, 0, 1],
        [[0.0, 0.5, 0.9], [0.5, 1.0, 0.5], [1.0, 1.0, 0.2]],
        0.875,
        {"threshold": 0.5, "f1": 0.8, "precision": 2 / 3, "recall": 1.0},
        {"threshold": 0.9, "j": 0.5, "tpr": 0.5, "fpr": 0.0},
        (0.25 + 0.25 + 0.04 + 0.01) / 4,
    ),
]


@pytest.mark.parametrize(
    ("scores", "labels", "roc", "area", "f1", "youden", "mse"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_two_classes_match_hand_computed_values(
    scores: list[float], labels: list[int], roc: list, area: float, f1: dict, youden: dict, mse: float
) -> None:
    truth = [bool(y) for y in labels]
    assert roc_curve(scores, truth) == roc  # every rate here is 0, 1/2 or 1: exact
    assert roc_area(roc_curve(scores, truth)) == pytest.approx(area)
    assert roc_area(roc) == pytest.approx(auroc(scores, truth)), "trapezoid area = rank AUROC"
    assert best_f1(scores, truth) == pytest.approx(f1)
    assert best_youden(scores, truth) == pytest.approx(youden)
    assert brier(scores, truth) == pytest.approx(mse)


# (id, scores, labels, best_f1, brier, reason for roc/auroc/best_youden, reason for best_f1)
ONE_CLASS = [
    # .6: tp1 fn1 -> 2/3 | .3: tp2 -> 1
    (
        "only-successes",
        [0.3, 0.6],
        [1, 1],
        {"threshold": 0.3, "f1": 1.0, "precision": 1.0, "recall": 1.0},
        (0.49 + 0.16) / 2,
        "no native failure among the 2 judged episodes",
        None,
    ),
    (
        "only-failures",
        [0.3, 0.6],
        [0, 0],
        None,
        (0.09 + 0.36) / 2,
        "no native success among the 2 judged episodes",
        "no native success among the 2 judged episodes",
    ),
    ("no-episode", [], [], None, None, "no judged episode", "no judged episode"),
]


@pytest.mark.parametrize(
    ("scores", "labels", "f1", "mse", "reason", "f1_reason"),
    [c[1:] for c in ONE_CLASS],
    ids=[c[0] for c in ONE_CLASS],
)
def test_one_class_leaves_the_two_class_metrics_undefined_with_a_reason(
    scores: list[float],
    labels: list[int],
    f1: dict | None,
    mse: float | None,
    reason: str,
    f1_reason: str | None,
) -> None:
    result = calibration(scores, [bool(y) for y in labels])
    assert (result["roc"], result["auroc"], result["best_youden"]) == (None, None, None)
    assert result["best_f1"] == (pytest.approx(f1) if f1 is not None else None)
    assert result["brier"] == (pytest.approx(mse) if mse is not None else None)
    expected = {"roc": reason, "auroc": reason, "best_youden": reason}
    if f1_reason is not None:
        expected["best_f1"] = f1_reason
    if mse is None:
        expected |= {"brier": reason, "ece": reason}
    assert result["undefined"] == expected
    json.dumps(result, allow_nan=False)  # strict JSON: no NaN anywhere


def _bin(lo: float, hi: float, count: int, mean: float | None, rate: float | None) -> dict[str, Any]:
    return {"bin_lo": lo, "bin_hi": hi, "count": count, "mean_score": mean, "native_rate": rate}


BIN_CASES = [
    (
        # floor(10 s): 0.0, 0.05 -> 0; 0.1 -> 1; 0.5, 0.55 -> 5; 0.99 -> 9; 1.0 -> 9 (last bin is closed)
        "ten-bins-with-edges",
        [0.0, 0.05, 0.1, 0.5, 0.55, 0.99, 1.0],
        [0, 0, 1, 0, 1, 1, 1],
        10,
        {0: (2, 0.025, 0.0), 1: (1, 0.1, 1.0), 5: (2, 0.525, 0.5), 9: (2, 0.995, 1.0)},
        (2 * 0.025 + 1 * 0.9 + 2 * 0.025 + 2 * 0.005) / 7,
    ),
    (
        # quarters: 0.25 opens bin 1, 0.75 and 1.0 both go to bin 3
        "four-bins",
        [0.24, 0.25, 0.75, 1.0],
        [0, 1, 1, 1],
        4,
        {0: (1, 0.24, 0.0), 1: (1, 0.25, 1.0), 3: (2, 0.875, 1.0)},
        (0.24 + 0.75 + 2 * 0.125) / 4,
    ),
    ("one-bin", [0.2, 0.8], [0, 1], 1, {0: (2, 0.5, 0.5)}, 0.0),
    ("empty", [], [], 2, {}, None),
]


@pytest.mark.parametrize(
    ("scores", "labels", "n_bins", "filled", "ece"), [c[1:] for c in BIN_CASES], ids=[c[0] for c in BIN_CASES]
)
def test_reliability_bins_and_ece(
    scores: list[float], labels: list[int], n_bins: int, filled: dict, ece: float | None
) -> None:
    bins = reliability_bins(scores, [bool(y) for y in labels], n_bins)
    expected = [_bin(b / n_bins, (b + 1) / n_bins, *filled.get(b, (0, None, None))) for b in range(n_bins)]
    assert bins == [pytest.approx(e) if e["count"] else e for e in expected]
    assert expected_calibration_error(bins) == (pytest.approx(ece) if ece is not None else None)


@pytest.mark.parametrize("n_bins", [0, -1, True, 2.5], ids=["zero", "negative", "bool", "float"])
def test_reliability_rejects_a_bad_bin_count(n_bins: Any) -> None:
    with pytest.raises(ValueError, match="n_bins must be an integer >= 1"):
        reliability_bins([0.5], [True], n_bins)


def test_mismatched_lengths_are_an_error() -> None:
    with pytest.raises(ValueError, match="equal length, got 2 and 1"):
        calibration([0.1, 0.2], [True])


@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 1.0]), st.booleans()), min_size=2, max_size=40
    ).filter(lambda rows: len({y for _, y in rows}) == 2)
)
def test_roc_area_equals_the_rank_auroc_with_ties(rows: list[tuple[float, bool]]) -> None:
    scores, labels = [s for s, _ in rows], [y for _, y in rows]
    assert roc_area(roc_curve(scores, labels)) == pytest.approx(auroc(scores, labels))


def test_summarize_calibrates_the_judged_episodes_only() -> None:
    """A fallback (score 1.0 on a native failure) would be the best-F1 threshold's false positive."""
    records = [
        {"task_id": 0, "native_success": True, "vlm_score": 0.8},
        {"task_id": 1, "native_success": False, "vlm_score": 0.3},
        {"task_id": 1, "native_success": False, "vlm_score": 1.0, "fallback": True},
    ]
    cal = summarize(records)["calibration"]
    assert (cal["n"], cal["n_success"], cal["n_failure"]) == (2, 1, 1)
    assert cal["roc"] == [[0.0, 1.0, 0.8], [1.0, 1.0, 0.3]]
    assert cal["best_f1"] == {"threshold": 0.8, "f1": 1.0, "precision": 1.0, "recall": 1.0}
    assert cal["brier"] == pytest.approx((0.04 + 0.09) / 2)


def test_the_auroc_interval_holds_the_auroc_and_is_a_point_for_perfect_separation() -> None:
    assert auroc_interval([0.9, 0.8, 0.2, 0.1], [True, True, False, False]) == (1.0, 1.0)
    scores, labels = [0.9, 0.4, 0.6, 0.3, 0.2, 0.7], [True, True, True, False, False, False]
    low, high = auroc_interval(scores, labels, draws=500, seed=1)
    assert low <= calibration(scores, labels)["auroc"] <= high and 0.0 <= low < high <= 1.0
    assert auroc_interval(scores, labels, draws=500, seed=1) == (low, high), "the same seed, the same draws"
    assert auroc_interval([0.5, 0.6], [True, True]) is None


@pytest.mark.parametrize(
    ("draws", "level"), [(0, 0.95), (100, 1.0), (100, 0.0)], ids=["no-draw", "level-1", "level-0"]
)
def test_the_auroc_interval_refuses_a_level_outside_0_1_or_no_draws(draws: int, level: float) -> None:
    with pytest.raises(ValueError, match="level must lie in"):
        auroc_interval([0.1, 0.9], [False, True], draws=draws, level=level)
