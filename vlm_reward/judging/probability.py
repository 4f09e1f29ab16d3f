"""Judging by probability: the score read from the answer tokens' probabilities, not from text.

The probabilities are those at the first answer position.

Reading a number out of free text fails whenever a model answers off-format (the episode
then falls back to the native reward), and a 0/1 answer throws away how sure the model
was. A question answered with one token, read from the model's next-token distribution,
has neither problem: it never parses text, and it gives a graded score, which is how
TOPReward reads "True" (success ROC AUC 0.826 reported). The mode is
``score_mode: probability``.

Which answers are read, and what each is worth, is the prompt preset's
:class:`AnswerScale`: yes/no (:data:`YES_NO`, the score is P(yes) / (P(yes) + P(no))) or a
1-5 rubric (:data:`RUBRIC_1_TO_5`, the score is the expected rubric value mapped to [0, 1]
by (n - 1) / 4). Each answer reaches the model in several spellings (``yes``, ``Yes``,
``YES``, with or without a leading space); its probability is the sum over the spellings the
tokenizer encodes as a single token (a multi-token spelling does not start the answer with
the word itself). The sums are normalised over the scale's answers in log space
(:func:`expected_score`), so a judge that is very sure still gives an exact ratio.

Pure: token ids and log-probabilities in, a float out. The transformers backend feeds it
the last position's log-softmax; the vLLM backend the logprobs the engine returns for
exactly these ids (``SamplingParams.logprob_token_ids``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AnswerScale:
    """The one-token answers a preset's question allows, and the score in [0, 1] of each."""

    name: str
    words: tuple[str, ...]
    scores: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.words) != len(self.scores) or len(self.words) < 2:
            raise ValueError(f"answer scale {self.name!r} needs one score per word, at least two words.")


YES_NO = AnswerScale("yes_no", ("yes", "no"), (1.0, 0.0))
# RoboReward's rubric: 1 (no progress) .. 5 (task done), scored (n - 1) / 4.
RUBRIC_1_TO_5 = AnswerScale("rubric_1_5", ("1", "2", "3", "4", "5"), (0.0, 0.25, 0.5, 0.75, 1.0))
ANSWER_SCALES: Mapping[str, AnswerScale] = {scale.name: scale for scale in (YES_NO, RUBRIC_1_TO_5)}


class NoAnswerMassError(RuntimeError):
    """No answer of the scale has probability mass among the log-probabilities the engine returned."""


def word_variants(word: str) -> tuple[str, ...]:
    """``word`` lower-case, capitalised and upper-case, each bare and after a space, deduplicated."""
    cases = dict.fromkeys((word.lower(), word.capitalize(), word.upper()))
    return tuple(prefix + case for prefix in ("", " ") for case in cases)


def single_token_ids(tokenizer: Any, words: Iterable[str]) -> frozenset[int]:
    """Ids of the spellings in ``words`` that ``tokenizer`` encodes as exactly one token."""
    ids = set()
    for word in words:
        encoded = tokenizer.encode(word, add_special_tokens=False)
        if len(encoded) == 1:
            ids.add(int(encoded[0]))
    return frozenset(ids)


@dataclass(frozen=True)
class AnswerTokens:
    """The token ids that start each answer of ``scale`` (``by_answer[i]`` for ``scale.words[i]``)."""

    scale: AnswerScale
    by_answer: tuple[frozenset[int], ...]

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, scale: AnswerScale = YES_NO) -> AnswerTokens:
        """The single-token spellings of each answer; ``ValueError`` if one has none or two share one."""
        by_answer = tuple(single_token_ids(tokenizer, word_variants(word)) for word in scale.words)
        for word, ids in zip(scale.words, by_answer, strict=True):
            if not ids:
                spellings = ", ".join(map(repr, word_variants(word)))
                raise ValueError(
                    f"the tokenizer encodes no spelling of {word!r} ({spellings}) as a single token, "
                    "so its probability cannot be read at the first answer position."
                )
        seen: set[int] = set()
        for word, ids in zip(scale.words, by_answer, strict=True):
            if ids & seen:
                raise ValueError(f"{word!r} shares token ids {sorted(ids & seen)} with another answer.")
            seen |= ids
        return cls(scale, by_answer)

    @property
    def ids(self) -> list[int]:
        """Every answer token id, sorted (what to ask an engine for)."""
        return sorted(set().union(*self.by_answer))


def expected_score(logprobs: Mapping[int, float], tokens: AnswerTokens) -> tuple[float, str]:
    """(expected score, likeliest answer) from token id -> log-probability at the first answer position.

    Each answer's probability is normalised over the scale's answers; the score is their
    expectation of ``scale.scores`` (yes/no: P(yes) / (P(yes) + P(no))). ``logprobs`` may
    hold the whole vocabulary or only some ids; a spelling it lacks counts as no mass.
    :class:`NoAnswerMassError` if no answer has any (all absent or ``-inf``).
    """
    masses = [_logsumexp(lp for token, lp in logprobs.items() if token in ids) for ids in tokens.by_answer]
    total = _logsumexp(masses)
    if total == -math.inf:
        words = "/".join(tokens.scale.words)
        raise NoAnswerMassError(
            f"no answer ({words}) has probability mass at the first answer position among the "
            f"{len(logprobs)} token log-probabilities returned."
        )
    shares = [math.exp(mass - total) for mass in masses]
    score = sum(share * value for share, value in zip(shares, tokens.scale.scores, strict=True))
    likeliest = max(range(len(shares)), key=shares.__getitem__)
    return min(max(score, 0.0), 1.0), tokens.scale.words[likeliest]


def _logsumexp(values: Iterable[float]) -> float:
    finite = [v for v in values if v != -math.inf]
    if not finite:
        return -math.inf
    top = max(finite)
    return top + math.log(sum(math.exp(v - top) for v in finite))
