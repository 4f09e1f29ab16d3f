"""Tests for reward_eval.analysis.frame_progress: a progress judge's measures, worked out by hand.

Pearson by hand: r = sum(dx dy) / sqrt(sum dx^2 sum dy^2) with d the deviation from the mean.
Spearman of a sequence against its order: the Pearson of its average ranks with 1..n.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from reward_eval.analysis.frame_progress import (
    CONSTANT,
    FEW_FRAMES,
    GOAL_FRACTION,
    aligned,
    ends_above_failures,
    frame_voc,
    pearson,
    summarize_frame_progress,
    with_goal_fraction,
)

PEARSON_CASES = [
    ("identical", [0, 0.5, 1], [0, 0.5, 1], 1.0),
    ("opposite", [0, 0.5, 1], [1, 0.5, 0], -1.0),
    # dx = +-0.5, dy = (-.4, -.2, .2, .4): 0.6 / sqrt(1 * 0.4)
    ("steps-against-a-ramp", [0, 0, 1, 1], [0.1, 0.3, 0.7, 0.9], 0.6 / math.sqrt(0.4)),
    ("constant-truth", [0.5, 0.5], [0.1, 0.9], None),
    ("one-pair", [0.5], [0.1], None),
    ("no-pair", [], [], None),
]


@pytest.mark.parametrize(("x", "y", "r"), [c[1:] for c in PEARSON_CASES], ids=[c[0] for c in PEARSON_CASES])
def test_pearson(x: list[float], y: list[float], r: float | None) -> None:
    assert pearson(x, y) == (None if r is None else pytest.approx(r))


def test_pearson_refuses_unequal_lengths() -> None:
    with pytest.raises(ValueError, match="equal length, got 2 and 1"):
        pearson([0, 1], [0])


GOAL = [0.0] * 8 + [0.5] * 7 + [1.0]  # 16 frames: one object placed at frame 8, both at the end


@pytest.mark.parametrize(
    ("scored", "expected"),
    [(16, GOAL), (4, [0.0, 0.0, 0.5, 1.0]), (1, [1.0])],  # frames 0, 5, 10, 15; one frame: the last
    ids=["every-frame", "4-of-16", "the-last-frame"],
)
def test_frame_scores_are_paired_with_the_frames_the_server_shows(scored: int, expected: list[float]) -> None:
    assert aligned(GOAL, scored) == expected


@pytest.mark.parametrize("scored", [0, 17], ids=["none", "more-than-the-video"])
def test_aligning_more_scores_than_frames_is_refused(scored: int) -> None:
    with pytest.raises(ValueError, match=f"{scored} frame scores cannot be frames of a video with 16"):
        aligned(GOAL, scored)


VOC_CASES = [
    ("rising", [0.1, 0.2, 0.9], 1.0, None),
    ("falling", [0.9, 0.5, 0.1], -1.0, None),
    # ranks (1.5, 1.5, 3) against (1, 2, 3): d = (-.5, -.5, 1) -> 0.75 / sqrt(0.75 * 2) = sqrt(3)/2
    ("flat-then-rising", [0.0, 0.0, 1.0], math.sqrt(3) / 2, None),
    ("constant", [0.4, 0.4, 0.4], None, CONSTANT),
    ("one-frame", [0.4], None, FEW_FRAMES),
]


@pytest.mark.parametrize(
    ("scores", "value", "reason"), [c[1:] for c in VOC_CASES], ids=[c[0] for c in VOC_CASES]
)
def test_frame_voc(scores: list[float], value: float | None, reason: str | None) -> None:
    got, why = frame_voc(scores)
    assert (got, why) == (None if value is None else pytest.approx(value), reason)


ENDS_CASES = [
    # failures' median 0.5: 0.9 and 0.6 above it, 0.5 not (strictly above)
    ("two-of-three", [0.9, 0.6, 0.5], [0.1, 0.5, 0.7], 2, 0.5, 2 / 3),
    ("even-failures-median-is-the-mean-of-the-middle-two", [0.35], [0.2, 0.3, 0.4, 0.9], 0, 0.35, 0.0),
    ("no-failure", [0.9], [], 0, None, None),
    ("no-success", [], [0.2], 0, 0.2, None),
]


@pytest.mark.parametrize(
    ("successes", "failures", "above", "median", "share"),
    [c[1:] for c in ENDS_CASES],
    ids=[c[0] for c in ENDS_CASES],
)
def test_ends_above_failures(
    successes: list[float], failures: list[float], above: int, median: float | None, share: float | None
) -> None:
    got = ends_above_failures(successes, failures)
    assert got == {
        "above": above,
        "successes": len(successes),
        "failure_median": median if median is None else pytest.approx(median),
        "share": share if share is None else pytest.approx(share),
    }


def line(task: int, native: bool, score: float, frames: list[float] | None, **extra: Any) -> dict[str, Any]:
    out = {
        "task_id": task,
        "task_text": f"task {task}",
        "native_success": native,
        "vlm_score": score,
        **extra,
    }
    return out if frames is None else {**out, "frame_scores": frames}


def test_the_summary_pools_frames_over_episodes_and_keeps_tasks_apart() -> None:
    records = [
        with_goal_fraction(line(0, True, 0.9, [0.1, 0.5, 0.9]), [0.0, 0.5, 1.0]),
        with_goal_fraction(line(0, False, 0.4, [0.1, 0.4, 0.4]), [0.0, 0.5, 0.5]),
        # 2 scores of a 3-frame video: frames 0 and 2 (goal 0, 0)
        with_goal_fraction(line(1, False, 0.2, [0.3, 0.2]), [0.0, 0.5, 0.0]),
        line(1, True, 0.8, [0.8, 0.8]),  # no goal fraction: not in the Pearson; a constant VOC
        line(1, True, 1.0, [0.2, 0.3], fallback=True),  # a fallback: left out everywhere
        line(1, True, 0.7, None),  # a judge without frame scores: only its end counts
    ]
    summary = summarize_frame_progress(records)
    overall, task0, task1 = summary["overall"], summary["per_task"]["0"], summary["per_task"]["1"]
    assert (overall["episodes"], overall["with_frame_scores"], overall["pearson_frames"]) == (5, 4, 8)
    scores = [0.1, 0.5, 0.9, 0.1, 0.4, 0.4, 0.3, 0.2]
    truth = [0.0, 0.5, 1.0, 0.0, 0.5, 0.5, 0.0, 0.0]
    assert overall["pearson_goal_fraction"] == pytest.approx(pearson(scores, truth))
    assert task0["pearson_goal_fraction"] == pytest.approx(pearson(scores[:6], truth[:6]))
    assert (
        task1["pearson_goal_fraction"] is None
    )  # one episode with goal fractions: scores 0.3, 0.2, truth 0, 0
    assert overall["frame_voc_successes"] == {
        "mean": pytest.approx(1.0),
        "n_voc": 1,
        "n_episodes": 2,
        "undefined": {CONSTANT: 1},
    }
    # successes end 0.9, 0.8, 0.7; failures 0.4, 0.2: median 0.3
    ends = {"above": 3, "successes": 3, "failure_median": pytest.approx(0.3), "share": 1.0}
    assert overall["ends_above_failures"] == ends
    assert task1["ends_above_failures"]["share"] == 1.0 and task0["task_text"] == "task 0"


def test_no_summary_without_frame_scores_and_a_bad_goal_fraction_is_named() -> None:
    assert (
        summarize_frame_progress([line(0, True, 0.9, None), line(0, False, 0.1, [0.2], fallback=True)])
        is None
    )
    with pytest.raises(ValueError, match=f"{GOAL_FRACTION} must be a non-empty list of numbers in"):
        summarize_frame_progress([with_goal_fraction(line(0, True, 0.9, [0.9]), []) | {GOAL_FRACTION: [2]}])


def test_the_report_shows_the_measures_per_task_and_the_terminal_line(tmp_path) -> None:
    from reward_eval.analysis.metrics import summarize
    from reward_eval.report.evaluation import write_report
    from reward_eval.report.frame_progress import frame_progress_lines

    records = [
        with_goal_fraction(line(0, True, 0.9, [0.1, 0.5, 0.9]), [0.0, 0.5, 1.0]),
        with_goal_fraction(line(0, False, 0.4, [0.1, 0.4, 0.4]), [0.0, 0.5, 0.5]),
        line(1, True, 0.8, [0.8, 0.8]),
    ]
    summary = {**summarize(records), "frame_progress": summarize_frame_progress(records)}
    markdown = write_report(tmp_path, records, summary, title="t")["markdown"].read_text()
    r = pearson([0.1, 0.5, 0.9, 0.1, 0.4, 0.4], [0.0, 0.5, 1.0, 0.0, 0.5, 0.5])
    assert "## Progress, frame by frame" in markdown
    assert f"| overall |  | {r:.3f} (6) | 1.000 (1/2) | 2/2 (median 0.400) |" in markdown
    assert f"| 1 | task 1 | n/a (no frame with a {GOAL_FRACTION}) | n/a ({CONSTANT}: 1) |" in markdown
    assert frame_progress_lines(summary) == [
        f"progress frame by frame: Pearson with {GOAL_FRACTION} {r:.3f} (6), per-frame VOC of the native "
        "successes 1.000 (1/2), successes ending above the failures' median 2/2 (median 0.400)"
    ]
    assert frame_progress_lines(summarize(records)) == []
