"""The terminal lines of ``train-classifier``'s frame measures. Milliseconds."""

from __future__ import annotations

import pytest

from reward_eval.classifier.report import frame_line

BLOCK = {
    "frames": 48,
    "pearson_goal_fraction": 0.7,
    "mean_score_by_goal_fraction": {"0": 0.1, "0.5": 0.5, "1": 0.9},
}
LINE = (
    "test served frames (48): Pearson with goal_fraction 0.700; "
    "mean score at goal_fraction 0 / 0.5 / 1: 0.100 / 0.500 / 0.900"
)


@pytest.mark.parametrize(
    ("voc", "tail"),
    [
        (None, ""),
        ({"mean": 0.8, "n_voc": 2, "n_episodes": 3}, "; per-frame VOC of successes 0.800 (2/3)"),
        ({"mean": None, "n_voc": 0, "n_episodes": 0}, "; per-frame VOC of successes n/a (0/0)"),
    ],
    ids=["summary-before-voc", "measured", "no-success"],
)
def test_frame_line_names_each_measure(voc: dict | None, tail: str) -> None:
    block = BLOCK if voc is None else {**BLOCK, "frame_voc_successes": voc}
    assert frame_line("test", block) == LINE + tail
