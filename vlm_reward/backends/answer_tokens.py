"""The answer tokens of each scale, and the probability-mode answer of the Qwen-VL backends.

The arithmetic is :mod:`vlm_reward.judging.probability`'s; this is what the Qwen backends share
around it: which tokens to read for each answer scale (found once per tokenizer at load),
what to ask vLLM for, and the answer a backend returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vlm_reward.backends.base import ProbabilityAnswer
from vlm_reward.judging.probability import ANSWER_SCALES, AnswerScale, AnswerTokens, expected_score

# Scale name -> its answer tokens, or why this tokenizer has none (raised per probability job).
ScaleTokens = Mapping[str, AnswerTokens | ValueError]


def answer_tokens_or_error(tokenizer: Any) -> dict[str, AnswerTokens | ValueError]:
    """Each answer scale's tokens in ``tokenizer``, or why there are none.

    A checkpoint without single-token spellings of one scale can still serve the text
    modes and the other scales.
    """
    found: dict[str, AnswerTokens | ValueError] = {}
    for name, scale in ANSWER_SCALES.items():
        try:
            found[name] = AnswerTokens.from_tokenizer(tokenizer, scale)
        except ValueError as exc:
            found[name] = exc
    return found


def require_answer_tokens(tokens: ScaleTokens | None, scale: AnswerScale, backend: str) -> AnswerTokens:
    """The tokens of ``scale``, or the ``ValueError`` (400) saying this checkpoint cannot read it."""
    if tokens is None:
        raise RuntimeError(f"backend {backend!r} is not loaded; call load() first.")
    found = tokens[scale.name]
    if isinstance(found, ValueError):
        raise ValueError(f"score_mode 'probability' is not available with this checkpoint: {found}")
    return found


def probability_answer(logprobs: Mapping[int, float], tokens: AnswerTokens) -> ProbabilityAnswer:
    """The answer for next-token ``logprobs``; ``NoAnswerMassError`` if no answer has mass."""
    score, answer = expected_score(logprobs, tokens)
    return ProbabilityAnswer(score, answer)


def probability_sampling(tokens: AnswerTokens) -> dict[str, Any]:
    """``vllm.SamplingParams`` kwargs for a probability job: one greedy step, the log-probabilities
    of exactly the answer tokens (``logprob_token_ids``, raw: before any sampling transform)."""
    return {"max_tokens": 1, "temperature": 0.0, "logprob_token_ids": tokens.ids}
