"""The fine-tune's check of itself (:mod:`reward_eval.finetune.serving_check`): pure, milliseconds.
The check on a real served judge is in ``test_finetune_libero.py``."""

from __future__ import annotations

from typing import Any

import pytest

from reward_eval.finetune.serving_check import check_line, serving_check, skew_message

TRAINER = {"/v/a_original.mp4": 0.99, "/v/a_reversed.mp4": 0.01, "/v/b_failure.mp4": 0.02}


def _served(*scores: float | None) -> list[dict[str, Any]]:
    sources = (("/v/a_original.mp4", "original", True), ("/v/a_reversed.mp4", "reversed", False))
    sources += (("/v/b_failure.mp4", "failure", False),)
    return [
        {"video": video, "source": source, "label": label, "score": score}
        for (video, source, label), score in zip(sources, scores, strict=True)
    ]


CASES = [
    ("as-trained", (0.99 + 1e-7, 0.01, 0.02 - 1e-7), True, 1e-7, None),
    ("at-the-tolerance", (0.99, 0.01, 0.04), True, 0.02, None),
    (
        "the-skew-of-issue-43",
        (0.0100, 0.0098, 0.0099),
        False,
        0.98,
        r"up to 0.9800 away from the trainer's readout \(qwen_vl_hf server, tolerance 0.02; worst: "
        r"a_original.mp4, trainer 0.9900, served 0.0100\)",
    ),
    ("a-failed-call", (0.99, None, 0.02), False, 0.0, r"could not score 1 of its 3 training examples"),
]


@pytest.mark.parametrize(("name", "scores", "passed", "largest", "message"), CASES, ids=[c[0] for c in CASES])
def test_the_served_scores_of_the_training_examples_are_held_to_the_trainers_readout(
    name: str, scores: tuple[float | None, ...], passed: bool, largest: float, message: str | None
) -> None:
    import re

    check = serving_check(_served(*scores), TRAINER, tolerance=0.02, backend="qwen_vl_hf")
    assert check["passed"] is passed
    assert check["max_abs_diff"] == pytest.approx(largest, abs=1e-9)
    assert [r["video"] for r in check["examples"]] == ["a_original.mp4", "a_reversed.mp4", "b_failure.mp4"]
    assert check["fallbacks"] == sum(s is None for s in scores)
    found = skew_message(check)
    assert (found is None) if message is None else re.search(message, found), found
    assert f"(qwen_vl_hf server, tolerance 0.02): {'ok' if passed else 'FAILED'}" in check_line(check)


def test_the_separation_is_the_served_one() -> None:
    check = serving_check(_served(0.7, 0.2, 0.3), TRAINER, tolerance=1.0, backend="qwen_vl_hf")
    assert check["separation"]["min_success"] == 0.7 and check["separation"]["max_failure"] == 0.3
    assert "lowest success 0.7000, highest failure 0.3000" in check_line(check)


def test_no_training_example_asked_is_a_failed_check() -> None:
    check = serving_check([], TRAINER, tolerance=0.02, backend="qwen_vl_hf")
    assert not check["passed"] and "asked no training example" in skew_message(check)
