"""The audit's pure parts: the registry it reads, the hard-negative instruction, the numbers. Milliseconds."""

from __future__ import annotations

from typing import Any

import pytest

from reward_eval.analysis import perturbations as pt
from reward_eval.analysis.audit import ORIGINAL, row_block, rows_above, summarize_audit
from reward_eval.analysis.hard_negatives import SuiteTask, hard_negative, scene_of

# ----------------------------------------------------------------------------- perturbations


def test_the_audit_reads_the_one_perturbation_registry() -> None:
    """The registry moved to ``vlm_reward.perturbations`` (the env's canaries use it); the audit's
    path is the same registry, not a copy (its own tests: tests/vlm_reward/test_perturbations.py)."""
    import vlm_reward.perturbations as registry

    assert pt.perturb is registry.perturb and pt.register_perturbation is registry.register_perturbation
    assert pt.perturbation_names() == registry.perturbation_names()


# ----------------------------------------------------------------------------- hard negatives

LIBERO_10_SLICE = {
    0: SuiteTask(0, "LIVING_ROOM_SCENE2", "put both the alphabet soup and the tomato sauce in the basket"),
    1: SuiteTask(1, "LIVING_ROOM_SCENE2", "put both the cream cheese box and the butter in the basket"),
    2: SuiteTask(2, "KITCHEN_SCENE3", "turn on the stove and put the moka pot on it"),
    7: SuiteTask(
        7, "LIVING_ROOM_SCENE1", "put both the alphabet soup and the cream cheese box in the basket"
    ),
}
NEGATIVE_CASES = [
    ("same-scene-first", 0, LIBERO_10_SLICE, LIBERO_10_SLICE[1].instruction),
    ("same-scene-either-way", 1, LIBERO_10_SLICE, LIBERO_10_SLICE[0].instruction),
    ("nearest-id-without-a-scene-mate", 7, LIBERO_10_SLICE, LIBERO_10_SLICE[2].instruction),
    ("lower-id-on-a-tie", 1, {t: SuiteTask(t, "", f"task {t}") for t in (0, 1, 2)}, "task 0"),
    ("only-task", 0, {0: SuiteTask(0, "", "task 0")}, None),
    ("same-instruction-is-no-negative", 0, {0: SuiteTask(0, "", "a"), 1: SuiteTask(1, "", "a")}, None),
]


@pytest.mark.parametrize(
    ("task", "tasks", "expected"), [c[1:] for c in NEGATIVE_CASES], ids=[c[0] for c in NEGATIVE_CASES]
)
def test_hard_negative_prefers_the_same_scene_then_the_nearest_task(
    task: int, tasks: dict[int, SuiteTask], expected: str | None
) -> None:
    assert hard_negative(task, tasks) == expected


@pytest.mark.parametrize(
    ("name", "scene"),
    [
        (
            "LIVING_ROOM_SCENE2_put_both_the_alphabet_soup_and_the_tomato_sauce_in_the_basket",
            "LIVING_ROOM_SCENE2",
        ),
        ("KITCHEN_SCENE10_put_the_butter_at_the_back", "KITCHEN_SCENE10"),
        ("pick_up_the_book", ""),
    ],
    ids=["living-room", "two-digit-scene", "no-scene"],
)
def test_scene_of_a_libero_task_name(name: str, scene: str) -> None:
    assert scene_of(name) == scene


# ----------------------------------------------------------------------------- the numbers


def case(name: str, task: int, score: float | None, original: float | None = None) -> dict[str, Any]:
    return {
        "perturbation": name,
        "task_id": task,
        "task_text": f"task {task}",
        "score": score,
        "original_score": original,
    }


CASE_LIST = [
    case(ORIGINAL, 0, 0.9, 0.9),
    case(ORIGINAL, 1, 0.6, 0.6),
    case("reversed", 0, 0.2, 0.9),
    case("reversed", 1, 0.7, 0.6),  # a rise: drop -0.1
    case("frozen", 0, None, 0.9),  # a fallback: counted apart
    case("frozen", 1, 0.1, 0.6),
    case("failure", 0, 0.5, 0.5),
    case("failure", 1, 0.3, 0.3),
]


def test_rows_hold_hand_computed_rates_scores_and_drops() -> None:
    summary = summarize_audit(CASE_LIST, ["reversed", "frozen"], threshold=0.5)
    assert list(summary["rows"]) == [ORIGINAL, "reversed", "frozen", "failure"]
    assert summary["rows"]["reversed"] == pytest.approx(
        {
            "episodes": 2,
            "judged": 2,
            "fallbacks": 0,
            "positive_rate": 0.5,
            "mean_score": 0.45,
            "mean_drop": 0.3,
            "mean_frame_voc": None,  # a judge without frame scores
        }
    )
    assert summary["rows"]["frozen"] == pytest.approx(
        {
            "episodes": 2,
            "judged": 1,
            "fallbacks": 1,
            "positive_rate": 0.0,
            "mean_score": 0.1,
            "mean_drop": 0.5,
            "mean_frame_voc": None,
        }
    )
    assert summary["rows"]["failure"]["positive_rate"] == 0.5  # 0.5 >= 0.5: the report's success rule
    assert (
        summary["rows"]["failure"]["mean_drop"] is None and summary["rows"][ORIGINAL]["positive_rate"] == 1.0
    )
    assert summary["per_task"]["1"]["rows"]["reversed"]["positive_rate"] == 1.0
    assert summary["per_task"]["0"]["task_text"] == "task 0"
    assert [c["score"] for c in summary["worst"]["reversed"]] == [0.7, 0.2]
    assert (summary["calls"], summary["fallback_calls"]) == (8, 1)


@pytest.mark.parametrize(
    ("rate", "expected"),
    [(0.4, ["reversed", "failure"]), (0.5, []), (0.0, ["reversed", "failure"])],
    ids=["below-both", "equal-is-not-above", "zero"],
)
def test_fail_above_gates_every_row_but_the_originals(rate: float, expected: list[str]) -> None:
    assert rows_above(summarize_audit(CASE_LIST, ["reversed", "frozen"], 0.5), rate) == expected


def test_an_empty_row_has_no_rates() -> None:
    assert row_block([], 0.5) == {
        "episodes": 0,
        "judged": 0,
        "fallbacks": 0,
        "positive_rate": None,
        "mean_score": None,
        "mean_drop": None,
        "mean_frame_voc": None,
    }


def framed(name: str, frames: list[float] | None, score: float | None = 0.1) -> dict[str, Any]:
    return {**case(name, 0, score, 0.9), "frame_scores": frames}


def test_a_progress_judge_s_rows_are_read_frame_by_frame() -> None:
    """Reversed: the success's frame scores backwards, a VOC of -1; frozen: the same score at every
    frame, no VOC; a fallback and a case without frame scores are left out of the mean."""
    cases = [
        framed(ORIGINAL, [0.0, 0.5, 1.0], 0.9),
        framed("reversed", [1.0, 0.5, 0.0]),
        framed("reversed", [0.9, 0.1, 0.1]),  # ranks (3, 1.5, 1.5) against (1, 2, 3): -sqrt(3)/2
        framed("reversed", [0.1, 0.2, 0.3], None),  # a fallback: its stale frames are not read
        framed("frozen", [0.0, 0.0, 0.0]),
        framed("frozen", None),
    ]
    rows = summarize_audit(cases, ["reversed", "frozen"], 0.5)["rows"]
    assert rows[ORIGINAL]["mean_frame_voc"] == pytest.approx(1.0)
    assert rows["reversed"]["mean_frame_voc"] == pytest.approx((-1 - 3**0.5 / 2) / 2)
    assert rows["frozen"]["mean_frame_voc"] is None and rows["failure"]["mean_frame_voc"] is None


# ----------------------------------------------------------------------------- the report's rows

ROW_CASES = [
    ("drop", "reversed", {"mean_drop": 0.3}, "0.300"),
    ("tiny-rise-is-zero", "reversed", {"mean_drop": -0.0004}, "0.000"),
    ("no-judged-pair", "frozen", {"mean_drop": None}, "n/a"),
    ("no-drop-for-the-originals", ORIGINAL, {"mean_drop": None}, ""),
]


@pytest.mark.parametrize(("name", "block", "drop"), [c[1:] for c in ROW_CASES], ids=[c[0] for c in ROW_CASES])
def test_a_report_row_shows_the_drop_to_three_decimals(name: str, block: dict[str, Any], drop: str) -> None:
    from reward_eval.report.audit import row_cells

    base = {"episodes": 2, "judged": 1, "fallbacks": 1, "positive_rate": 0.5, "mean_score": 0.25}
    assert row_cells(name, {**base, **block}) == ("2", "1 (1 fallback)", "50.0%", "0.250", drop)


def test_the_audit_report_has_the_frame_column_only_for_a_judge_with_frame_scores() -> None:
    from reward_eval.report.audit import FRAME_HEADER, audit_blocks
    from reward_eval.report.document import render_markdown

    cases = [framed(ORIGINAL, [0.0, 0.5, 1.0], 0.9), framed("reversed", [1.0, 0.5, 0.0])]
    summary = {**summarize_audit(cases, ["reversed"], 0.5), "worst": {}}
    with_frames = render_markdown(audit_blocks(summary))
    assert f"| mean drop | {FRAME_HEADER} |" in with_frames and "| 0.800 | -1.000 |" in with_frames
    without = render_markdown(audit_blocks({**summarize_audit(CASE_LIST, ["reversed"], 0.5), "worst": {}}))
    assert FRAME_HEADER not in without
