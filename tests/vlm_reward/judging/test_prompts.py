"""Prompt presets as data: which answers each reads in probability mode, and which text mode reads it."""

from __future__ import annotations

import pytest

from vlm_reward.judging.probability import RUBRIC_1_TO_5, YES_NO
from vlm_reward.judging.prompts import PRESETS, ROBOREWARD_PROMPT, ServerPrompts


@pytest.mark.parametrize(
    ("preset", "scale", "prefix", "text_mode"),
    [
        ("qwen", YES_NO, "", None),
        ("primo", YES_NO, "", None),
        ("yes_no", YES_NO, "", None),
        ("roboreward", RUBRIC_1_TO_5, "ANSWER: ", "rubric"),
    ],
    ids=["qwen", "primo", "yes_no", "roboreward"],
)
def test_each_preset_says_how_its_answers_are_read(preset: str, scale, prefix: str, text_mode) -> None:
    spec = PRESETS[preset]
    assert (spec.answer_scale, spec.answer_prefix, spec.text_score_mode) == (scale, prefix, text_mode)
    assert "{task}" in spec.question_template


@pytest.mark.parametrize(
    ("server_kwargs", "mode", "request_kwargs", "expected"),
    [
        ({}, "probability", {"prompt": "roboreward"}, ROBOREWARD_PROMPT),
        ({}, "rubric", {"prompt": "roboreward"}, ROBOREWARD_PROMPT),
        ({"prompt": "roboreward"}, "probability", {}, ROBOREWARD_PROMPT),
        ({"prompt": "roboreward"}, "rubric", {}, ROBOREWARD_PROMPT),
        ({}, "probability", {}, PRESETS["yes_no"]),
    ],
    ids=["request-probability", "request-rubric", "server-probability", "server-rubric", "default"],
)
def test_one_setting_selects_the_rubric(
    server_kwargs: dict, mode: str, request_kwargs: dict, expected
) -> None:
    assert ServerPrompts("qwen", server_kwargs).for_job(mode, request_kwargs) == expected


@pytest.mark.parametrize("mode", ["auto", "percentage", "unit"])
def test_a_text_mode_that_would_misread_the_rubric_is_refused(mode: str) -> None:
    with pytest.raises(ValueError, match=f"read in score_mode 'rubric' or 'probability', not '{mode}'"):
        ServerPrompts("qwen", {}).for_job(mode, {"prompt": "roboreward"})
