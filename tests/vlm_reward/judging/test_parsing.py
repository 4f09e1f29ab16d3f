"""Tests for vlm_reward.judging.parsing: tag extraction, number reading per mode, whole outputs.

The tables are the specification in examples; the hypothesis tests check the promise the
server relies on: whatever the model writes, the parser either returns a finite score in
[0, 1] or raises ScoreParseError, never anything else.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlm_reward.judging.parsing import (
    ParsedScore,
    ScoreParseError,
    extract_answer,
    extract_think,
    normalize_number,
    parse_score,
)
from vlm_reward.protocol import TEXT_SCORE_MODES

PRIMO_OUTPUT = (
    "<think><planning>The task is to put the bowl on the plate. I check the gripper, the bowl "
    "and the plate in the first frame, the video and the last frame.</planning>"
    "<observation>In the first frame the bowl is on the table. In the video the arm grasps the "
    "bowl and lifts it. In the last frame the bowl is above the plate but not released."
    "</observation><reasoning>Grasp and lift are done, placing is not finished, so most of the "
    "task is done.</reasoning></think><answer>85</answer>"
)

# ---------------------------------------------------------------------------- extract_think

THINK_CASES = [
    ("no-tags", "0.7", None),
    ("answer-only", "<answer>85</answer>", None),
    ("plain", "<think> the bowl moved </think><answer>1</answer>", "the bowl moved"),
    ("case-and-spaces", "<THINK >\nlooks done\n</ Think>\n<answer>1</answer>", "looks done"),
    ("empty-block", "<think></think><answer>0</answer>", ""),
    ("unclosed-then-answer", "<think>grasp ok, place not ok\n<answer>40</answer>", "grasp ok, place not ok"),
    ("unclosed-truncated", "<think>the arm reaches for", "the arm reaches for"),
    ("opened-in-prompt", "the arm lifts the bowl</think>\n<answer>60</answer>", "the arm lifts the bowl"),
    ("first-of-two", "<think>first</think> x <think>second</think><answer>1</answer>", "first"),
    ("multiline", "<think>line one\nline two</think>0.5", "line one\nline two"),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in THINK_CASES], ids=[c[0] for c in THINK_CASES])
def test_extract_think(text: str, expected: str | None) -> None:
    assert extract_think(text) == expected


def test_extract_think_keeps_primo_sections() -> None:
    think = extract_think(PRIMO_OUTPUT)
    assert think is not None
    assert think.startswith("<planning>The task is")
    assert think.endswith("task is done.</reasoning>")
    assert "<observation>" in think


# --------------------------------------------------------------------------- extract_answer

ANSWER_CASES = [
    ("single", "<answer>85</answer>", "85"),
    ("stripped", "<answer>\n  0.9 \n</answer>", "0.9"),
    ("case-and-spaces", "< ANSWER >0.4</ Answer >", "0.4"),
    ("last-of-several", "<answer>1</answer> on second thought <answer>0.5</answer>", "0.5"),
    ("after-think", "<think>maybe <answer>10</answer></think><answer>70</answer>", "70"),
    ("only-inside-think", "<think>draft <answer>30</answer></think>", "30"),
    ("unclosed-stop-string", "<think>done</think>\n<answer>72", "72"),
    ("opened-in-prompt", "0.7</answer>", "0.7"),
    ("no-tags", "  0.25\n", "0.25"),
    ("think-removed", "<think>I count 3 objects</think>\nThe answer is 0.6.", "The answer is 0.6."),
    ("prompt-opened-think-removed", "I count 3 objects</think> 0.6", "0.6"),
    ("all-think-blocks-removed", "<think>a 1</think>b<think>c 2</think> 0.3", "b 0.3"),
    ("truncated-think", "<think>I count 3 objects and", ""),
    ("unclosed-think-then-unclosed-answer", "<think>ok <answer>55", "55"),
    ("empty-block", "<think>x</think><answer></answer>", ""),
    ("empty-text", "", ""),
]


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in ANSWER_CASES], ids=[c[0] for c in ANSWER_CASES]
)
def test_extract_answer(text: str, expected: str) -> None:
    assert extract_answer(text) == expected


# ------------------------------------------------------------------ normalize_number: reads

# (id, value, mode, score, raw_value)
NUMBER_CASES = [
    # auto: bare numbers
    ("auto-zero", "0", "auto", 0.0, 0.0),
    ("auto-unit", "0.85", "auto", 0.85, 0.85),
    ("auto-one-is-unit", "1", "auto", 1.0, 1.0),
    ("auto-one-point-zero", "1.0", "auto", 1.0, 1.0),
    ("auto-leading-dot", ".5", "auto", 0.5, 0.5),
    ("auto-percent-range", "85", "auto", 0.85, 85.0),
    ("auto-just-above-one", "1.5", "auto", 0.015, 1.5),
    ("auto-hundred", "100", "auto", 1.0, 100.0),
    ("auto-plus-sign", "+40", "auto", 0.4, 40.0),
    ("auto-exponent", "5e-1", "auto", 0.5, 0.5),
    ("auto-trailing-dot", "70.", "auto", 0.7, 70.0),
    ("auto-negative-zero", "-0", "auto", 0.0, 0.0),
    # explicit notation
    ("auto-percent-sign", "85%", "auto", 0.85, 85.0),
    ("auto-percent-space", "85 %", "auto", 0.85, 85.0),
    ("auto-percent-word", "85 Percent", "auto", 0.85, 85.0),
    ("auto-small-percent", "0.5%", "auto", 0.005, 0.5),
    ("auto-fraction", "7/10", "auto", 0.7, 0.7),
    ("auto-fraction-spaces", "3 / 4", "auto", 0.75, 0.75),
    ("auto-out-of", "3 out of 4", "auto", 0.75, 0.75),
    ("auto-out-of-hundred", "85 Out Of 100", "auto", 0.85, 0.85),
    ("auto-full-fraction", "4/4", "auto", 1.0, 1.0),
    # numbers inside prose: the last number counts
    ("prose-trailing", "I think the progress is about 70.", "auto", 0.7, 70.0),
    ("prose-steps", "Step 1: grasp 2 objects. Step 2: place them. Answer: 0.8", "auto", 0.8, 0.8),
    ("prose-fraction-then-percent", "2 of 3 subtasks done, so 67%", "auto", 0.67, 67.0),
    ("prose-markdown", "**Score:** `0.9`", "auto", 0.9, 0.9),
    ("prose-boxed", "\\boxed{0.6}", "auto", 0.6, 0.6),
    ("prose-ellipsis", "hmm...85", "auto", 0.85, 85.0),
    ("prose-range-reads-end", "somewhere in 70-80%", "auto", 0.8, 80.0),
    ("prose-model-name-ignored", "Qwen2.5 rates it 0.4", "auto", 0.4, 0.4),
    ("prose-ordinal-ignored", "the 3rd attempt scores 0.2", "auto", 0.2, 0.2),
    ("prose-version-ignored", "v1.2.3 says 0.3", "auto", 0.3, 0.3),
    # verdict words (no number present)
    ("word-yes", "Yes", "auto", 1.0, 1.0),
    ("word-no", "no.", "auto", 0.0, 0.0),
    ("word-true", "TRUE", "auto", 1.0, 1.0),
    ("word-false", "false", "unit", 0.0, 0.0),
    ("word-success", "Success!", "percentage", 1.0, 1.0),
    ("word-failure", "Failure", "auto", 0.0, 0.0),
    ("word-succeeded", "The robot succeeded.", "auto", 1.0, 1.0),
    ("word-failed", "The robot failed.", "auto", 0.0, 0.0),
    ("word-complete", "The task is complete.", "auto", 1.0, 1.0),
    ("word-incomplete", "The task is incomplete.", "auto", 0.0, 0.0),
    ("word-agreeing", "Yes, the task was completed successfully.", "auto", 1.0, 1.0),
    ("word-negated", "The task is not completed.", "auto", 0.0, 0.0),
    ("word-contraction", "It didn't succeed", "auto", 0.0, 0.0),
    ("word-curly-contraction", "It didn\u2019t succeed", "auto", 0.0, 0.0),
    ("word-negated-failure", "It did not fail", "auto", 1.0, 1.0),
    ("word-no-and-failed", "No, it failed.", "auto", 0.0, 0.0),
    # unit mode
    ("unit-zero", "0", "unit", 0.0, 0.0),
    ("unit-value", "0.35", "unit", 0.35, 0.35),
    ("unit-one", "1", "unit", 1.0, 1.0),
    ("unit-percent-sign-wins", "85%", "unit", 0.85, 85.0),
    ("unit-fraction-wins", "7/10", "unit", 0.7, 0.7),
    # percentage mode
    ("pct-value", "85", "percentage", 0.85, 85.0),
    ("pct-small-is-percent", "0.5", "percentage", 0.005, 0.5),
    ("pct-one-is-percent", "1", "percentage", 0.01, 1.0),
    ("pct-hundred", "100", "percentage", 1.0, 100.0),
    ("pct-sign", "85%", "percentage", 0.85, 85.0),
    ("pct-fraction-wins", "7/10", "percentage", 0.7, 0.7),
    # non-string inputs
    ("bool-true", True, "unit", 1.0, 1.0),
    ("bool-false", False, "percentage", 0.0, 0.0),
    ("int-auto", 85, "auto", 0.85, 85.0),
    ("int-unit", 1, "unit", 1.0, 1.0),
    ("float-auto", 0.25, "auto", 0.25, 0.25),
    ("float-percentage", 42.5, "percentage", 0.425, 42.5),
    ("fraction-object", Fraction(1, 4), "unit", 0.25, 0.25),
]


@pytest.mark.parametrize(
    ("value", "mode", "score", "raw"), [c[1:] for c in NUMBER_CASES], ids=[c[0] for c in NUMBER_CASES]
)
def test_normalize_number_reads(value: object, mode: str, score: float, raw: float) -> None:
    got_score, got_raw = normalize_number(value, mode)  # type: ignore[arg-type]
    assert got_score == pytest.approx(score, abs=1e-12)
    assert got_raw == pytest.approx(raw, abs=1e-12)
    assert type(got_score) is float and type(got_raw) is float


def test_normalize_number_never_returns_negative_zero() -> None:
    score, _ = normalize_number("-0", "unit")
    assert math.copysign(1.0, score) == 1.0


def test_default_mode_is_auto() -> None:
    assert normalize_number("85") == (0.85, 85.0)
    assert normalize_number("0.85") == (0.85, 0.85)


# ----------------------------------------------------------------- normalize_number: errors

# (id, value, mode, words the message must also contain)
ERROR_CASES = [
    ("empty", "", "auto", "empty"),
    ("blank", "  \n ", "auto", "empty"),
    ("garbage", "the robot moved", "auto", "no number"),
    ("word-nan", "nan", "auto", "no number"),
    ("word-inf", "infinity", "unit", "no number"),
    ("conflicting-words", "yes and no", "auto", "verdict"),
    ("loose-negation", "The robot did not manage to complete the task", "auto", "verdict"),
    ("dangling-negation", "complete? not", "auto", "verdict"),
    ("negative", "-5", "auto", "negative"),
    ("negative-in-prose", "score=-0.3", "unit", "negative"),
    ("negative-percent", "-5%", "percentage", "percentage"),
    ("auto-above-100", "150", "auto", "above 100"),
    ("auto-huge-exponent", "1e5", "auto", "above 100"),
    ("overflow-to-inf", "9" * 400, "auto", "finite"),
    ("unit-above-1", "85", "unit", "above 1"),
    ("unit-just-above-1", "1.01", "unit", "above 1"),
    ("pct-above-100", "100.5", "percentage", "above 100"),
    ("percent-above-100", "150%", "auto", "percentage"),
    ("percent-above-100-unit", "101 %", "unit", "percentage"),
    ("fraction-above-1", "11/10", "auto", "fraction"),
    ("fraction-zero-denominator", "3/0", "auto", "fraction"),
    ("fraction-zero-over-zero", "0/0", "unit", "fraction"),
    ("fraction-negative", "-1/2", "unit", "fraction"),
    ("float-nan", float("nan"), "auto", "finite"),
    ("float-inf", float("inf"), "unit", "finite"),
    ("float-negative", -0.5, "auto", "negative"),
    ("int-above-100", 101, "auto", "above 100"),
    ("float-unit-above-1", 2.0, "unit", "above 1"),
    ("int-too-big-for-float", 10**400, "percentage", "too large"),
]


@pytest.mark.parametrize(
    ("value", "mode", "reason"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES]
)
def test_normalize_number_errors(value: object, mode: str, reason: str) -> None:
    with pytest.raises(ScoreParseError) as info:
        normalize_number(value, mode)  # type: ignore[arg-type]
    message = str(info.value)
    assert reason in message
    # The message quotes the offending text (long texts are cut, so compare a prefix).
    assert str(value).strip()[:40] in message
    assert message.endswith(".") and "\n" not in message  # one sentence, one line


def test_score_parse_error_is_a_value_error() -> None:
    # Callers that only know ValueError (e.g. generic request validation) still catch it.
    assert issubclass(ScoreParseError, ValueError)


def test_error_message_truncates_long_text() -> None:
    text = "blah " * 1000
    with pytest.raises(ScoreParseError) as info:
        normalize_number(text)
    message = str(info.value)
    assert len(message) < 300
    assert "blah blah" in message
    assert f"{len(text.strip())} characters" in message


@pytest.mark.parametrize(
    "mode", ["Auto", "percent", "", None, 1], ids=["case", "typo", "empty", "none", "int"]
)
def test_unknown_mode_is_a_plain_value_error(mode: object) -> None:
    with pytest.raises(ValueError, match="auto, percentage, unit") as info:
        normalize_number("0.5", mode)  # type: ignore[arg-type]
    assert not isinstance(info.value, ScoreParseError)
    assert repr(mode) in str(info.value)


@pytest.mark.parametrize("value", [None, [0.5], b"0.5"], ids=["none", "list", "bytes"])
def test_normalize_number_rejects_other_types(value: object) -> None:
    with pytest.raises(TypeError, match=type(value).__name__):
        normalize_number(value)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ parse_score

# (id, model output, mode, score, raw_value, answer, think is present)
OUTPUT_CASES = [
    ("primo-auto", PRIMO_OUTPUT, "auto", 0.85, 85.0, "85", True),
    ("primo-percentage", PRIMO_OUTPUT, "percentage", 0.85, 85.0, "85", True),
    (
        "primo-stop-string-stripped",
        "<think><planning>p</planning><observation>o</observation><reasoning>r</reasoning></think>\n"
        "<answer>72",
        "percentage",
        0.72,
        72.0,
        "72",
        True,
    ),
    (
        "primo-zero-progress",
        "<think><reasoning>The arm never touched the drawer.</reasoning></think><answer>0</answer>",
        "percentage",
        0.0,
        0.0,
        "0",
        True,
    ),
    (
        "r1-template-prefilled-think",
        "The gripper closes on the mug and lifts it.\n</think>\n\n<answer>40</answer>",
        "percentage",
        0.4,
        40.0,
        "40",
        True,
    ),
    ("qwen-tagged", "<answer>1</answer>", "auto", 1.0, 1.0, "1", False),
    ("qwen-tagged-unit", "<answer>0.3</answer>", "unit", 0.3, 0.3, "0.3", False),
    ("qwen-bare", "0.7", "auto", 0.7, 0.7, "0.7", False),
    ("qwen-bare-newline", "0.7\n", "unit", 0.7, 0.7, "0.7", False),
    (
        "qwen-prose",
        "The robot picked up the black bowl and placed it on the plate. The task is completed.",
        "auto",
        1.0,
        1.0,
        "The robot picked up the black bowl and placed it on the plate. The task is completed.",
        False,
    ),
    ("qwen-yes", "Yes", "unit", 1.0, 1.0, "Yes", False),
    ("qwen-markdown", "**Answer:** <answer> 0.9 </answer>", "auto", 0.9, 0.9, "0.9", False),
    ("qwen-percent-in-answer", "<answer>About 60%</answer>", "unit", 0.6, 60.0, "About 60%", False),
    (
        "qwen-prose-with-steps",
        "Step 1: the arm reaches the bowl. Step 2: it lifts 1 bowl. Overall score: 0.8",
        "auto",
        0.8,
        0.8,
        "Step 1: the arm reaches the bowl. Step 2: it lifts 1 bowl. Overall score: 0.8",
        False,
    ),
]


@pytest.mark.parametrize(
    ("text", "mode", "score", "raw", "answer", "has_think"),
    [c[1:] for c in OUTPUT_CASES],
    ids=[c[0] for c in OUTPUT_CASES],
)
def test_parse_score_realistic_outputs(
    text: str, mode: str, score: float, raw: float, answer: str, has_think: bool
) -> None:
    parsed = parse_score(text, mode)
    assert isinstance(parsed, ParsedScore)
    assert parsed.score == pytest.approx(score, abs=1e-12)
    assert parsed.raw_value == pytest.approx(raw, abs=1e-12)
    assert parsed.answer == answer
    assert (parsed.think is not None) == has_think
    assert parsed.think == extract_think(text)


def test_parsed_score_is_frozen() -> None:
    parsed = parse_score("<answer>0.5</answer>")
    with pytest.raises(AttributeError):
        parsed.score = 1.0  # type: ignore[misc]


# (id, model output, mode, text the message must quote)
OUTPUT_ERROR_CASES = [
    ("truncated-in-think", "<think>The arm moves toward the", "auto", "<think>The arm moves"),
    ("empty-answer-block", "<think>done</think><answer></answer>", "percentage", "<answer></answer>"),
    ("word-answer", "<answer>maybe</answer>", "auto", "maybe"),
    ("percent-answer-in-unit-mode", PRIMO_OUTPUT, "unit", "85"),
    ("empty-output", "", "auto", "''"),
]


@pytest.mark.parametrize(
    ("text", "mode", "quoted"), [c[1:] for c in OUTPUT_ERROR_CASES], ids=[c[0] for c in OUTPUT_ERROR_CASES]
)
def test_parse_score_errors(text: str, mode: str, quoted: str) -> None:
    with pytest.raises(ScoreParseError, match="cannot read a score") as info:
        parse_score(text, mode)
    assert quoted in str(info.value)


def test_parse_score_checks_mode_and_type() -> None:
    with pytest.raises(ValueError, match="score mode must be one of") as info:
        parse_score("<answer></answer>", "percent")  # bad mode wins over the empty answer
    assert not isinstance(info.value, ScoreParseError)
    with pytest.raises(TypeError, match="bytes"):
        parse_score(b"<answer>1</answer>")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------- properties

PROPERTY_SETTINGS = settings(max_examples=300, deadline=None)

# Pieces that steer generated text into the parser's interesting paths (tags, signs,
# fractions, percents, verdict words, negations) far more often than st.text() alone.
TOKENS = st.sampled_from(
    [
        "<think>", "</think>", "<answer>", "</answer>", "< ANSWER >", "0", "1", "0.5", "85", "100",
        "150", "1e400", "-3", ".", "..", "%", " percent", "/", " out of ", "e", "yes", "no", "not ",
        "n't ", "complete", "failed", " ", "\n", "Qwen2.5",
    ]
)  # fmt: skip
STRUCTURED_TEXT = st.lists(st.one_of(TOKENS, st.text(max_size=4)), max_size=12).map("".join)
ANY_TEXT = st.one_of(st.text(), STRUCTURED_TEXT)
MODES = st.sampled_from(TEXT_SCORE_MODES)


def _assert_valid(score: float, raw: float) -> None:
    assert type(score) is float and math.isfinite(score) and 0.0 <= score <= 1.0
    assert type(raw) is float and math.isfinite(raw)


@PROPERTY_SETTINGS
@given(text=ANY_TEXT, mode=MODES)
def test_normalize_number_text_only_raises_score_parse_error(text: str, mode: str) -> None:
    try:
        score, raw = normalize_number(text, mode)
    except ScoreParseError:
        return
    _assert_valid(score, raw)


@PROPERTY_SETTINGS
@given(value=st.one_of(st.floats(), st.integers()), mode=MODES)
def test_normalize_number_numbers_only_raise_score_parse_error(value: float, mode: str) -> None:
    try:
        score, raw = normalize_number(value, mode)
    except ScoreParseError:
        if mode == "rubric":  # a level: a whole number from 1 to 5
            assert value not in (1, 2, 3, 4, 5)
        else:  # a number in [0, 1] is a valid score in every other mode
            assert not (0 <= value <= 1)
        return
    _assert_valid(score, raw)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ANSWER: 4", (0.75, 4.0)),
        ("The cup is on the plate.\nANSWER: 5", (1.0, 5.0)),
        ("answer:1", (0.0, 1.0)),
        ("ANSWER: 2 ... ANSWER: 3", (0.5, 3.0)),
        ("<answer>3</answer>", (0.5, 3.0)),
        ("<think>maybe 5</think>ANSWER: 2", (0.25, 2.0)),
    ],
    ids=["plain", "after-reasoning", "lower-no-space", "last-wins", "answer-tags", "think-ignored"],
)
def test_rubric_reads_answer_n_as_n_minus_1_over_4(text: str, expected: tuple[float, float]) -> None:
    parsed = parse_score(text, "rubric")
    assert (parsed.score, parsed.raw_value) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("ANSWER: 6", "6 is not a rubric level"),
        ("ANSWER: 2.5", "2.5 is not a rubric level"),
        ("ANSWER: 0", "0 is not a rubric level"),
        ("80%", "not a fraction or a percentage"),
        ("yes", "no 'ANSWER: n' with n from 1 to 5"),
    ],
    ids=["above-5", "not-whole", "zero", "percentage", "verdict-word"],
)
def test_rubric_rejects_what_is_not_a_level(text: str, reason: str) -> None:
    with pytest.raises(ScoreParseError, match=re.escape(reason)):
        parse_score(text, "rubric")


@PROPERTY_SETTINGS
@given(x=st.floats(min_value=0.0, max_value=1.0))
def test_unit_round_trips_through_repr(x: float) -> None:
    # repr() writes the shortest string that reads back exactly ("1e-05", "0.1"), so this
    # exercises the number regex on every float notation Python produces.
    assert normalize_number(repr(x), "unit") == (x, x)
    assert parse_score(f"<answer>score: {x!r}</answer>", "unit").score == x


@PROPERTY_SETTINGS
@given(x=st.floats(min_value=0.0, max_value=100.0))
def test_percentage_scales_by_100(x: float) -> None:
    assert normalize_number(x, "percentage") == (x / 100, x)
    assert normalize_number(f"{x!r}%", "unit") == (x / 100, x)


@PROPERTY_SETTINGS
@given(text=ANY_TEXT, mode=MODES)
def test_parse_score_only_raises_score_parse_error(text: str, mode: str) -> None:
    try:
        parsed = parse_score(text, mode)
    except ScoreParseError:
        return
    _assert_valid(parsed.score, parsed.raw_value)
    assert parsed.answer == extract_answer(text) != ""
