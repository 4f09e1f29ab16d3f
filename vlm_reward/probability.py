"""Judging by probability: the score is P(yes) / (P(yes) + P(no)) at the first answer position.

Reading a number out of free text fails whenever a model answers off-format (the episode
then falls back to the native reward), and a 0/1 answer throws away how sure the model
was. A yes/no question read from the model's next-token distribution has neither problem:
it never parses text, and it gives a graded score, which is how TOPReward reads "True"
(success ROC AUC 0.826 reported). The mode is ``score_mode: probability``.

"yes" reaches the model in several spellings: ``yes``, ``Yes``, ``YES``, with or without a
leading space, each one token in Qwen's tokenizer. P(yes) is the sum over the spellings
the tokenizer encodes as a single token (a multi-token spelling does not start the answer
with the word itself), likewise P(no). The two sums are computed in log space
(:func:`yes_probability`), so a judge that is very sure still gives an exact ratio.

Pure: token ids and log-probabilities in, a float out. The transformers backend feeds it
the last position's log-softmax; the vLLM backend the logprobs the engine returns for
exactly these ids (``SamplingParams.logprob_token_ids``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

YES_WORD = "yes"
NO_WORD = "no"


class NoAnswerMassError(RuntimeError):
    """Neither word has probability mass among the log-probabilities the engine returned."""


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
    """The token ids that start a "yes" and a "no" answer."""

    yes: frozenset[int]
    no: frozenset[int]

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, yes_word: str = YES_WORD, no_word: str = NO_WORD) -> AnswerTokens:
        """The single-token spellings of both words; ``ValueError`` if a word has none or they share one."""
        yes = single_token_ids(tokenizer, word_variants(yes_word))
        no = single_token_ids(tokenizer, word_variants(no_word))
        for word, ids in ((yes_word, yes), (no_word, no)):
            if not ids:
                spellings = ", ".join(map(repr, word_variants(word)))
                raise ValueError(
                    f"the tokenizer encodes no spelling of {word!r} ({spellings}) as a single token, "
                    "so its probability cannot be read at the first answer position."
                )
        if yes & no:
            raise ValueError(f"{yes_word!r} and {no_word!r} share token ids {sorted(yes & no)}.")
        return cls(yes, no)

    @property
    def ids(self) -> list[int]:
        """Every answer token id, sorted (what to ask an engine for)."""
        return sorted(self.yes | self.no)


def yes_probability(logprobs: Mapping[int, float], tokens: AnswerTokens) -> float:
    """P(yes) / (P(yes) + P(no)) from token id -> log-probability at the first answer position.

    ``logprobs`` may hold the whole vocabulary or only some ids; a spelling it lacks counts
    as no mass. :class:`NoAnswerMassError` if neither word has any (all absent or ``-inf``).
    """
    log_yes = _logsumexp(lp for token, lp in logprobs.items() if token in tokens.yes)
    log_no = _logsumexp(lp for token, lp in logprobs.items() if token in tokens.no)
    if log_yes == -math.inf and log_no == -math.inf:
        raise NoAnswerMassError(
            "neither 'yes' nor 'no' has probability mass at the first answer position among the "
            f"{len(logprobs)} token log-probabilities returned."
        )
    # P(yes) / (P(yes) + P(no)) = sigmoid(log P(yes) - log P(no)), stable for any magnitudes.
    diff = log_yes - log_no
    if diff >= 0:
        return 1.0 / (1.0 + math.exp(-diff))
    return math.exp(diff) / (1.0 + math.exp(diff))


def _logsumexp(values: Iterable[float]) -> float:
    finite = [v for v in values if v != -math.inf]
    if not finite:
        return -math.inf
    top = max(finite)
    return top + math.log(sum(math.exp(v - top) for v in finite))
