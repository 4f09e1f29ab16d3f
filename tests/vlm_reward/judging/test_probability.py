"""Unit tests for vlm_reward.judging.probability: spellings, token ids and the expected-score arithmetic
(yes/no: P(yes); the 1-5 rubric: the expected level mapped by (n - 1) / 4)."""

from __future__ import annotations

import math

import pytest

from vlm_reward.judging.probability import (
    RUBRIC_1_TO_5,
    YES_NO,
    AnswerScale,
    AnswerTokens,
    NoAnswerMassError,
    expected_score,
    single_token_ids,
    word_variants,
)

TOKENS = AnswerTokens(YES_NO, (frozenset({1, 2}), frozenset({3})))
RUBRIC = AnswerTokens(RUBRIC_1_TO_5, tuple(frozenset({10 + n}) for n in range(1, 6)))


def yes_probability(logprobs: dict[int, float], tokens: AnswerTokens) -> float:
    return expected_score(logprobs, tokens)[0]


class WordTokenizer:
    """Encodes a known word as one id and anything else as one id per character."""

    def __init__(self, vocab: dict[str, int]) -> None:
        self.vocab = vocab

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [self.vocab[text]] if text in self.vocab else [1000 + ord(c) for c in text]


def test_word_variants_are_the_cases_bare_and_after_a_space() -> None:
    assert word_variants("yes") == ("yes", "Yes", "YES", " yes", " Yes", " YES")
    assert word_variants("No") == ("no", "No", "NO", " no", " No", " NO")


def test_only_single_token_spellings_count() -> None:
    tokenizer = WordTokenizer({"yes": 5, " Yes": 6, "no": 7})
    assert single_token_ids(tokenizer, word_variants("yes")) == {5, 6}
    assert AnswerTokens.from_tokenizer(tokenizer) == AnswerTokens(YES_NO, (frozenset({5, 6}), frozenset({7})))
    assert AnswerTokens.from_tokenizer(tokenizer).ids == [5, 6, 7]


@pytest.mark.parametrize(
    ("vocab", "message"),
    [
        ({"yes": 5}, "no spelling of 'no'"),
        ({"no": 5}, "no spelling of 'yes'"),
        ({"yes": 5, "NO": 5}, "shares token ids"),
    ],
    ids=["no-no", "no-yes", "shared-id"],
)
def test_a_tokenizer_without_usable_spellings_is_an_error(vocab: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AnswerTokens.from_tokenizer(WordTokenizer(vocab))


@pytest.mark.parametrize(
    ("logprobs", "expected"),
    [
        ({1: math.log(0.3), 2: math.log(0.1), 3: math.log(0.4), 9: math.log(0.2)}, 0.4 / 0.8),
        ({1: math.log(0.2), 3: math.log(0.2)}, 0.5),
        ({1: math.log(0.2)}, 1.0),
        ({3: math.log(0.2), 9: 0.0}, 0.0),
        ({1: -1000.0, 3: -1001.0}, 1 / (1 + math.exp(-1))),
        ({1: -math.inf, 3: -745.0}, 0.0),
    ],
    ids=[
        "sums-spellings-ignores-others",
        "even",
        "only-yes-returned",
        "only-no",
        "tiny-masses",
        "yes-minus-inf",
    ],
)
def test_yes_probability(logprobs: dict[int, float], expected: float) -> None:
    assert yes_probability(logprobs, TOKENS) == pytest.approx(expected, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize(
    "logprobs", [{}, {9: 0.0}, {1: -math.inf, 3: -math.inf}], ids=["empty", "other-token", "minus-inf"]
)
def test_no_mass_for_either_word_is_a_defined_error(logprobs: dict[int, float]) -> None:
    with pytest.raises(NoAnswerMassError, match=r"no answer \(yes/no\) has probability mass"):
        yes_probability(logprobs, TOKENS)


@pytest.mark.parametrize(
    ("logprobs", "expected"),
    [
        ({15: 0.0}, (1.0, "5")),
        ({11: 0.0, 9: 5.0}, (0.0, "1")),
        ({12: math.log(0.5), 14: math.log(0.5)}, (0.5, "2")),
        ({11: math.log(0.1), 13: math.log(0.2), 15: math.log(0.7)}, (0.2 * 0.5 + 0.7, "5")),
        ({14: -2000.0, 15: -2000.0 + math.log(3)}, (0.75 * 0.25 + 1.0 * 0.75, "5")),
    ],
    ids=["sure-5", "sure-1-ignores-others", "tie-first-wins", "spread", "tiny-masses"],
)
def test_rubric_expected_score(logprobs: dict[int, float], expected: tuple[float, str]) -> None:
    score, answer = expected_score(logprobs, RUBRIC)
    assert (score, answer) == (pytest.approx(expected[0], rel=1e-12), expected[1])


def test_digits_are_single_tokens_and_a_scale_needs_one_score_per_word() -> None:
    tokenizer = WordTokenizer({str(n): 20 + n for n in range(1, 6)})
    assert AnswerTokens.from_tokenizer(tokenizer, RUBRIC_1_TO_5).ids == [21, 22, 23, 24, 25]
    with pytest.raises(ValueError, match="one score per word"):
        AnswerScale("bad", ("a", "b"), (1.0,))
