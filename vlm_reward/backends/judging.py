"""Score mode "probability" for the Qwen2.5-VL backends: from next-token log-probabilities to an answer.

The arithmetic is :mod:`vlm_reward.probability`'s; this is what both Qwen backends share
around it: which tokens to read (found once per tokenizer at load), what to ask vLLM for,
and the answer a backend returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vlm_reward.backends.base import ProbabilityAnswer
from vlm_reward.probability import AnswerTokens, yes_probability


def answer_tokens_or_error(tokenizer: Any) -> AnswerTokens | ValueError:
    """The tokenizer's "yes"/"no" tokens, or why there are none (kept, raised per probability job).

    A checkpoint without single-token spellings can still serve the text modes.
    """
    try:
        return AnswerTokens.from_tokenizer(tokenizer)
    except ValueError as exc:
        return exc


def require_answer_tokens(tokens: AnswerTokens | ValueError | None, backend: str) -> AnswerTokens:
    """``tokens``, or the ``ValueError`` (400) saying this checkpoint cannot judge by probability."""
    if tokens is None:
        raise RuntimeError(f"backend {backend!r} is not loaded; call load() first.")
    if isinstance(tokens, ValueError):
        raise ValueError(f"score_mode 'probability' is not available with this checkpoint: {tokens}")
    return tokens


def probability_answer(logprobs: Mapping[int, float], tokens: AnswerTokens) -> ProbabilityAnswer:
    """The answer for next-token ``logprobs``; ``NoAnswerMassError`` if neither word has mass."""
    probability = yes_probability(logprobs, tokens)
    return ProbabilityAnswer(probability, "yes" if probability >= 0.5 else "no")


def probability_sampling(tokens: AnswerTokens) -> dict[str, Any]:
    """``vllm.SamplingParams`` kwargs for a probability job: one greedy step, the log-probabilities
    of exactly the answer tokens (``logprob_token_ids``, raw: before any sampling transform)."""
    return {"max_tokens": 1, "temperature": 0.0, "logprob_token_ids": tokens.ids}
