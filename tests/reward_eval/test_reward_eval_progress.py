"""Tests for reward_eval.analysis.progress: prefix lengths, Spearman, VOC and its summary, by hand.

Spearman values are worked out from average ranks in the comments (d = rank difference,
rho = 1 - 6 sum d^2 / (n (n^2 - 1)) without ties; the Pearson of the ranks with them).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from reward_eval.analysis.progress import (
    CONSTANT,
    FEW_PREFIXES,
    UNREADABLE,
    average_ranks,
    prefix_lengths,
    spearman,
    summarize_progress,
    voc,
)

PREFIX_CASES = [
    ("16-frames-k4", 16, 4, [4, 8, 12, 16]),
    ("9-frames-k4", 9, 4, [3, 5, 7, 9]),  # ceil(9/4)=3, ceil(18/4)=5, ceil(27/4)=7
    ("11-frames-k4", 11, 4, [3, 6, 9, 11]),
    ("5-frames-k3", 5, 3, [2, 4, 5]),
    ("as-many-frames-as-k", 4, 4, [1, 2, 3, 4]),
    ("fewer-frames-than-k", 2, 4, [1, 2]),  # ceil(2/4)=1, ceil(4/4)=1, 2, 2: repeats judged once
    ("one-frame", 1, 4, [1]),
    ("k-is-1", 16, 1, [16]),
]


@pytest.mark.parametrize(
    ("n", "k", "expected"), [c[1:] for c in PREFIX_CASES], ids=[c[0] for c in PREFIX_CASES]
)
def test_prefix_lengths(n: int, k: int, expected: list[int]) -> None:
    assert prefix_lengths(n, k) == expected


@pytest.mark.parametrize(
    ("n", "k", "message"),
    [
        (0, 4, "n_frames must be an integer >= 1, got 0"),
        (4, 0, "k must be an integer >= 1, got 0"),
        (True, 4, "n_frames must be an integer >= 1, got True"),
    ],
    ids=["no-frames", "k-zero", "bool"],
)
def test_prefix_lengths_rejects_bad_counts(n: Any, k: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        prefix_lengths(n, k)


SPEARMAN_CASES = [
    ("rising", [1, 2, 3, 4], [0.1, 0.4, 0.6, 0.9], 1.0),
    ("falling", [1, 2, 3, 4], [0.9, 0.6, 0.4, 0.1], -1.0),
    # y ranks 1 3 2 4, d = 0 -1 1 0: 1 - 6*2/(4*15) = 0.8
    ("one-swap", [1, 2, 3, 4], [0.2, 0.6, 0.3, 0.7], 0.8),
    # y ranks 4 2.5 2.5 1; x dev -1.5 -.5 .5 1.5, y dev 1.5 0 0 -1.5: -4.5 / sqrt(5 * 4.5) = -3/sqrt(10)
    ("tied-scores", [1, 2, 3, 4], [0.9, 0.5, 0.5, 0.1], -3 / math.sqrt(10)),
    # y ranks 1.5 3 1.5: x dev -1 0 1, y dev -.5 1 -.5: sum of products 0
    ("up-and-down", [1, 2, 3], [0.2, 0.9, 0.2], 0.0),
    ("two-points", [4, 8], [0.7, 0.2], -1.0),
]


@pytest.mark.parametrize(
    ("x", "y", "rho"), [c[1:] for c in SPEARMAN_CASES], ids=[c[0] for c in SPEARMAN_CASES]
)
def test_spearman_matches_hand_computed_values(x: list[float], y: list[float], rho: float) -> None:
    assert spearman(x, y) == pytest.approx(rho, abs=1e-12)


@pytest.mark.parametrize(
    ("x", "y"),
    [([1, 2, 3], [0.5, 0.5, 0.5]), ([2, 2], [0.1, 0.9]), ([1], [0.5]), ([], [])],
    ids=["constant-scores", "constant-positions", "one-pair", "empty"],
)
def test_spearman_is_none_when_undefined(x: list[float], y: list[float]) -> None:
    assert spearman(x, y) is None


def test_perfect_orders_are_exactly_plus_and_minus_one() -> None:
    """No 0.9999999: a VOC of 1 must print and compare as 1."""
    assert spearman(range(1, 17), [i / 20 for i in range(16)]) == 1.0
    assert spearman(range(1, 17), [1 - i / 20 for i in range(16)]) == -1.0


def test_average_ranks_share_the_mean_rank_of_a_tie() -> None:
    assert average_ranks([0.3, 0.1, 0.3, 0.3, 0.9]).tolist() == [3.0, 1.0, 3.0, 3.0, 5.0]


VOC_CASES = [
    ("all-judged", [4, 8, 12, 16], [0.1, 0.4, 0.6, 0.9], (1.0, None)),
    ("fallback-left-out", [4, 8, 12, 16], [0.9, None, 0.6, 0.1], (-1.0, None)),
    ("one-judged-prefix", [4, 8], [0.1, None], (None, FEW_PREFIXES)),
    ("every-call-failed", [4, 8], [None, None], (None, FEW_PREFIXES)),
    ("k-is-1", [16], [0.5], (None, FEW_PREFIXES)),
    ("one-frame-video", [1], [0.5], (None, FEW_PREFIXES)),
    ("constant-score", [1, 2], [0.3, 0.3], (None, CONSTANT)),
]


@pytest.mark.parametrize(
    ("frames", "scores", "expected"), [c[1:] for c in VOC_CASES], ids=[c[0] for c in VOC_CASES]
)
def test_voc_of_one_episode(frames: list[int], scores: list[float | None], expected: tuple) -> None:
    assert voc(frames, scores) == expected


def test_voc_rejects_a_score_count_that_does_not_match_the_prefixes() -> None:
    with pytest.raises(ValueError, match="2 prefixes but 1 scores"):
        voc([4, 8], [0.5])


def ep(task: int, native: bool, scores: list[float | None], value: float | None, reason: str | None) -> dict:
    return {
        "task_id": task,
        "task_text": f"task {task}",
        "native_success": native,
        "scores": scores,
        "voc": value,
        "voc_undefined": reason,
    }


def test_summary_splits_by_task_and_native_outcome() -> None:
    episodes = [
        ep(0, True, [0.1, 0.5], 1.0, None),
        ep(0, True, [0.2, 0.2], None, CONSTANT),
        ep(0, False, [0.6, None, 0.2], -1.0, None),
        ep(1, True, [0.1, 0.3, 0.2], 0.5, None),
        ep(1, False, [], None, UNREADABLE),
        ep(10, False, [None, None], None, FEW_PREFIXES),
    ]
    summary = summarize_progress(episodes, 4)
    assert (summary["prefixes"], summary["calls"], summary["fallback_calls"]) == (4, 12, 3)
    assert list(summary["per_task"]) == ["0", "1", "10"], "numeric task order"

    def stats(n: int, n_voc: int, mean: float | None, undefined: dict[str, int]) -> dict[str, Any]:
        return {"n_episodes": n, "n_voc": n_voc, "mean_voc": mean, "undefined": undefined}

    overall = summary["overall"]
    assert overall["native_success"] == stats(3, 2, 0.75, {CONSTANT: 1})  # (1.0 + 0.5) / 2
    assert overall["native_failure"] == stats(3, 1, -1.0, {FEW_PREFIXES: 1, UNREADABLE: 1})
    assert overall["all"] == stats(
        6, 3, pytest.approx(0.5 / 3), {CONSTANT: 1, FEW_PREFIXES: 1, UNREADABLE: 1}
    )
    task0 = summary["per_task"]["0"]
    assert task0["task_text"] == "task 0"
    assert task0["native_success"] == stats(2, 1, 1.0, {CONSTANT: 1})
    assert task0["native_failure"] == stats(1, 1, -1.0, {})
    assert summary["per_task"]["1"]["native_failure"] == stats(1, 0, None, {UNREADABLE: 1})
    assert summary["per_task"]["10"]["native_success"] == stats(0, 0, None, {})
    json.dumps(summary, allow_nan=False)


def test_summary_of_no_episode_is_all_empty() -> None:
    summary = summarize_progress([], 4)
    empty = {"n_episodes": 0, "n_voc": 0, "mean_voc": None, "undefined": {}}
    assert summary == {
        "prefixes": 4,
        "calls": 0,
        "fallback_calls": 0,
        "overall": {"all": empty, "native_success": empty, "native_failure": empty},
        "per_task": {},
    }
