"""Unit tests for vlm_reward.probability: spellings, token ids and the P(yes) arithmetic."""

from __future__ import annotations

import math

import pytest

from vlm_reward.probability import (
    AnswerTokens,
    NoAnswerMassError,
    single_token_ids,
    word_variants,
    yes_probability,
)

TOKENS = AnswerTokens(yes=frozenset({1, 2}), no=frozenset({3}))


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
    assert AnswerTokens.from_tokenizer(tokenizer) == AnswerTokens(frozenset({5, 6}), frozenset({7}))
    assert AnswerTokens.from_tokenizer(tokenizer).ids == [5, 6, 7]


@pytest.mark.parametrize(
    ("vocab", "message"),
    [
        ({"yes": 5}, "no spelling of 'no'"),
        ({"no": 5}, "no spelling of 'yes'"),
        ({"yes": 5, "NO": 5}, "share"),
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
    with pytest.raises(NoAnswerMassError, match="neither 'yes' nor 'no'"):
        yes_probability(logprobs, TOKENS)
