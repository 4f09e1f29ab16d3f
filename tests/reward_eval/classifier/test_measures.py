"""What train-classifier measures beyond the fine-tune's table: frames against the goal fraction,
judged successes per policy variant. Milliseconds."""

from __future__ import annotations

import pytest

from reward_eval.classifier.measures import frame_block, variant_block, variant_lines


def test_frame_block_compares_scores_with_the_goal_fraction_and_the_target() -> None:
    # a success classifier's frames: one placed object of two scores low
    block = frame_block([0.0, 0.1, 0.2, 0.9], [0.0, 0.5, 0.5, 1.0], [0.0, 0.0, 0.0, 1.0])
    assert block["frames"] == 4
    assert block["mean_score_by_goal_fraction"] == pytest.approx({"0": 0.0, "0.5": 0.15, "1": 0.9})
    assert block["pearson_target"] > block["pearson_goal_fraction"] > 0.8
    assert block["frame_voc_successes"]["n_episodes"] == 0, "no episodes given, no VOC"


@pytest.mark.parametrize(
    ("episodes", "mean", "n_voc", "n_episodes"),
    [
        ([(4, True)], 1.0, 1, 1),  # one success rising through its 4 frames
        ([(2, True), (2, True)], 1.0, 2, 2),  # 0.0 < 0.1, then 0.2 < 0.9
        ([(3, False), (1, True)], None, 0, 1),  # a one-frame success has no VOC
        ([(2, False), (2, False)], None, 0, 0),
    ],
    ids=["one-success", "two-successes", "one-frame", "failures-only"],
)
def test_frame_block_measures_the_per_frame_voc_of_the_successes_alone(
    episodes: list[tuple[int, bool]], mean: float | None, n_voc: int, n_episodes: int
) -> None:
    voc = frame_block([0.0, 0.1, 0.2, 0.9], [0.0, 0.5, 0.5, 1.0], [0, 0, 0, 1], episodes)[
        "frame_voc_successes"
    ]
    assert (voc["mean"], voc["n_voc"], voc["n_episodes"]) == (mean, n_voc, n_episodes)


def test_frame_block_falls_when_the_scores_rank_against_the_frames() -> None:
    voc = frame_block([0.9, 0.5, 0.2, 0.1], [0.0, 0.5, 0.5, 1.0], [0, 0, 0, 1], [(4, True)])[
        "frame_voc_successes"
    ]
    assert voc["mean"] == pytest.approx(-1.0)


def test_frame_block_refuses_episodes_that_do_not_hold_the_scores() -> None:
    with pytest.raises(ValueError, match="episodes hold 3 frames, the scores 4"):
        frame_block([0.0, 0.1, 0.2, 0.9], [0.0, 0.5, 0.5, 1.0], [0, 0, 0, 1], [(3, True)])


def case(video: str, label: bool, score: float | None, source: str = "") -> dict:
    return {
        "video": video,
        "label": label,
        "score": score,
        "source": source or ("original" if label else "failure"),
    }


def test_variant_block_counts_judged_successes_by_native_outcome() -> None:
    variants = {"a.mp4": "expert", "b.mp4": "misplace", "c.mp4": "misplace", "d.mp4": "misplace"}
    judged = [
        case("a.mp4", True, 0.9),
        case("a.mp4", False, 0.9, "wrong_task"),  # a counterfactual: not an episode
        case("b.mp4", True, 0.3),
        case("c.mp4", False, 0.7),
        case("d.mp4", False, None),  # a failed call: not judged
    ]
    block = variant_block(judged, variants, threshold=0.5)
    assert list(block) == ["expert", "misplace"]
    assert block["misplace"] == {
        "episodes": 2, "native_successes": 1, "judged_of_successes": 0, "judged_of_failures": 1
    }  # fmt: skip
    assert variant_lines(block) == [
        "expert: 1/1 successes and 0/0 failures judged a success",
        "misplace: 0/1 successes and 1/1 failures judged a success",
    ]
