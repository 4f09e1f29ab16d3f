"""The judge's own readout as a loss: cross-entropy on the answer token after the prompt.

The server scores a video in probability mode from the next-token distribution at the first
answer position: each answer's mass is the sum over its single-token spellings, normalised
over the preset's answers, and the score is the expected value of the answer scale
(:func:`vlm_reward.judging.probability.expected_score`; ``yes_no``: P(yes) / (P(yes) + P(no))).
Training minimises the cross-entropy of exactly that normalised distribution against the
answer the label asks for: "yes" for a success and "no" for a failure (``roboreward``: "5" and
"1", the answers scored 1 and 0). So what falls is what the server reads, whatever mass the
model keeps on other tokens, and the answer tokens' ids come from the tokenizer (through
:class:`~vlm_reward.judging.probability.AnswerTokens`), never hard-coded.

**The class-prior floor.** A judge that gives every video the same distribution can at best
put the classes' weighted shares on the two answers; its loss is then the entropy of that share,
``ln 2`` with balanced class weights (:func:`prior_floor`). A training run that ends there, or
whose P(yes) is the same for every example, has learnt the label frequencies and nothing about
the videos (:func:`at_class_prior`); the command reports that instead of writing such a judge.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from vlm_reward.judging.probability import AnswerScale, AnswerTokens

# How close to the floor a loss counts as "on it" (relative), and the least spread of scores
# over the examples that counts as telling them apart.
FLOOR_TOLERANCE = 0.05
MIN_SPREAD = 0.05


def target_index(scale: AnswerScale, label: bool) -> int:
    """The answer a success (score 1.0) or a failure (score 0.0) should get on ``scale``."""
    wanted = 1.0 if label else 0.0
    for i, score in enumerate(scale.scores):
        if score == wanted:
            return i
    raise ValueError(
        f"answer scale {scale.name!r} has no answer scored {wanted}; it cannot be trained on labels."
    )


def answer_log_shares(logits: Any, tokens: AnswerTokens) -> Any:
    """``(batch, answers)`` log-shares of each answer at the last position's ``logits``
    ``(batch, vocab)``: the log of the normalised masses the server reads (differentiable)."""
    import torch

    logp = torch.log_softmax(logits.float(), dim=-1)
    masses = torch.stack([torch.logsumexp(logp[:, sorted(ids)], dim=-1) for ids in tokens.by_answer], dim=-1)
    return masses - torch.logsumexp(masses, dim=-1, keepdim=True)


def expected_scores(log_shares: Any, scale: AnswerScale) -> Any:
    """``(batch,)`` expected score of each row: the server's probability-mode score."""
    import torch

    values = torch.tensor(scale.scores, dtype=log_shares.dtype, device=log_shares.device)
    return (log_shares.exp() * values).sum(dim=-1)


def weighted_nll(log_shares: Any, targets: Sequence[int], weights: Sequence[float]) -> Any:
    """Per-row ``-weight * log share of the target answer`` (``(batch,)``); the caller sums and
    scales it for gradient accumulation."""
    import torch

    index = torch.tensor(list(targets), device=log_shares.device)
    w = torch.tensor(list(weights), dtype=log_shares.dtype, device=log_shares.device)
    return -w * log_shares.gather(1, index[:, None]).squeeze(1)


def prior_floor(labels: Sequence[bool], weights: Sequence[float]) -> float:
    """The weighted loss of the best constant judge: the entropy of the positive class's weighted
    share (``ln 2`` when the weights balance the classes)."""
    total = sum(weights)
    return binary_entropy(sum(w for label, w in zip(labels, weights, strict=True) if label) / total)


def binary_entropy(q: float) -> float:
    """The entropy of a yes/no answer with P(yes) = ``q``, in nats: the binary cross-entropy of
    the constant answer ``q`` against labels whose mean is ``q`` (0 at 0 and 1)."""
    if q in (0.0, 1.0):
        return 0.0
    return -(q * math.log(q) + (1 - q) * math.log(1 - q))


def at_class_prior(
    loss: float,
    floor: float,
    scores: Sequence[float],
    tolerance: float = FLOOR_TOLERANCE,
    min_spread: float = MIN_SPREAD,
) -> str | None:
    """Why the judge ended at the class prior, in one sentence, or ``None`` when it did not.

    ``loss`` is the weighted loss over the training examples after training, ``scores`` their
    scores: on the floor means ``loss >= floor * (1 - tolerance)``; equal scores means their
    spread (max - min) is below ``min_spread``.
    """
    if scores and max(scores) - min(scores) < min_spread:
        return (
            f"the fine-tuned judge gives every training example nearly the same score "
            f"({min(scores):.3f} to {max(scores):.3f}): it learnt the class prior, not the videos"
        )
    if loss >= floor * (1 - tolerance):
        return (
            f"the training loss ended at {loss:.4f}, on the class-prior floor {floor:.4f} (the loss of "
            "a judge that answers the same for every video): it learnt the class prior, not the videos"
        )
    return None
