"""How well the judge's continuous score separates and predicts the native outcome: pure functions.

Input: the scores of the judged (non-fallback) episodes and their native success (the
positive class). No I/O; numpy and exact fractions only, so thresholds tie-break exactly.

**Thresholds.** A threshold ``t`` predicts success for ``score >= t`` (the env's rule). The
candidate thresholds are the distinct observed scores: any other value predicts the same
episodes as the next observed score above it. The best-F1 and best-Youden thresholds are
the candidates that maximise the metric; among equal values (compared exactly, as
fractions) the **largest** threshold wins: at the same F1 or J it rewards the fewest
episodes, the conservative choice for a reward. Both are chosen on the same episodes they
are measured on, so they are in-sample (optimistic) estimates.

**ROC.** ``roc`` lists ``[fpr, tpr, threshold]`` per candidate, highest threshold first;
the curve starts at ``(0, 0)`` (a threshold above every score), which is not listed.
``auroc`` is the trapezoid area under it, which equals the rank (Mann-Whitney) AUROC of
:func:`.metrics.auroc`, ties included.

**Undefined values** are ``None`` with a sentence in ``undefined[key]``: ROC, AUROC and
Youden's J need both classes, F1 needs a native success, everything needs an episode.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

DEFAULT_BINS = 10


def _arrays(scores: Sequence[float], labels: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    values = np.asarray(scores, dtype=np.float64).reshape(-1)
    positive = np.asarray(labels, dtype=bool).reshape(-1)
    if len(values) != len(positive):
        raise ValueError(f"scores and labels must have equal length, got {len(values)} and {len(positive)}.")
    return values, positive


def sweep(scores: Sequence[float], labels: Sequence[bool]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(thresholds, tp, fp)``: the distinct scores, highest first, and the true and false
    positives of ``score >= threshold`` at each."""
    values, positive = _arrays(scores, labels)
    thresholds = np.unique(values)[::-1]
    pos, neg = np.sort(values[positive]), np.sort(values[~positive])
    tp = len(pos) - np.searchsorted(pos, thresholds, side="left")
    fp = len(neg) - np.searchsorted(neg, thresholds, side="left")
    return thresholds, tp.astype(int), fp.astype(int)


def roc_curve(scores: Sequence[float], labels: Sequence[bool]) -> list[list[float]] | None:
    """``[[fpr, tpr, threshold], ...]``, highest threshold first; ``None`` without both classes."""
    thresholds, tp, fp = sweep(scores, labels)
    n_pos, n_neg = _class_counts(labels)
    if n_pos == 0 or n_neg == 0:
        return None
    return [[int(fp[i]) / n_neg, int(tp[i]) / n_pos, float(t)] for i, t in enumerate(thresholds)]


def roc_area(roc: Sequence[Sequence[float]]) -> float:
    """Trapezoid area under ``roc`` (as :func:`roc_curve` returns it) from ``(0, 0)``."""
    fpr = np.concatenate([[0.0], [p[0] for p in roc]])
    tpr = np.concatenate([[0.0], [p[1] for p in roc]])
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))


def _class_counts(labels: Sequence[bool]) -> tuple[int, int]:
    positive = np.asarray(labels, dtype=bool).reshape(-1)
    return int(positive.sum()), int((~positive).sum())


def _best(values: Sequence[Fraction]) -> int:
    """Index of the largest value; the first (= largest threshold) among exact ties."""
    best = 0
    for i, value in enumerate(values):
        if value > values[best]:
            best = i
    return best


def best_f1(scores: Sequence[float], labels: Sequence[bool]) -> dict[str, float] | None:
    """The threshold with the highest F1 (native success positive) and its F1, precision and
    recall; ``None`` without a native success. Every candidate predicts at least one success,
    so precision is always defined."""
    thresholds, tp, fp = sweep(scores, labels)
    n_pos, _ = _class_counts(labels)
    if n_pos == 0:
        return None
    f1 = [Fraction(2 * int(a), 2 * int(a) + int(b) + (n_pos - int(a))) for a, b in zip(tp, fp, strict=True)]
    i = _best(f1)
    return {
        "threshold": float(thresholds[i]),
        "f1": float(f1[i]),
        "precision": int(tp[i]) / int(tp[i] + fp[i]),
        "recall": int(tp[i]) / n_pos,
    }


def best_youden(scores: Sequence[float], labels: Sequence[bool]) -> dict[str, float] | None:
    """The threshold with the highest Youden's J = TPR - FPR and its J, TPR and FPR; ``None``
    without both classes. The lowest candidate predicts every episode a success (J = 0), so
    the best J is never negative; 0 means no threshold beats chance."""
    thresholds, tp, fp = sweep(scores, labels)
    n_pos, n_neg = _class_counts(labels)
    if n_pos == 0 or n_neg == 0:
        return None
    j = [Fraction(int(a), n_pos) - Fraction(int(b), n_neg) for a, b in zip(tp, fp, strict=True)]
    i = _best(j)
    return {
        "threshold": float(thresholds[i]),
        "j": float(j[i]),
        "tpr": int(tp[i]) / n_pos,
        "fpr": int(fp[i]) / n_neg,
    }


def brier(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """Mean squared error of the score as a probability of native success; ``None`` when empty."""
    values, positive = _arrays(scores, labels)
    return float(np.mean((values - positive) ** 2)) if len(values) else None


def reliability_bins(
    scores: Sequence[float], labels: Sequence[bool], n_bins: int = DEFAULT_BINS
) -> list[dict[str, Any]]:
    """``n_bins`` equal-width score bins over [0, 1]: ``bin_lo``, ``bin_hi``, ``count``,
    ``mean_score`` and ``native_rate`` (both ``None`` for an empty bin).

    A score goes to bin ``min(floor(score * n_bins), n_bins - 1)``: each bin is
    ``[lo, hi)`` except the last, ``[lo, 1]``. A calibrated score has ``native_rate`` close
    to ``mean_score`` in every bin.
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, int) or n_bins < 1:
        raise ValueError(f"n_bins must be an integer >= 1, got {n_bins!r}.")
    values, positive = _arrays(scores, labels)
    index = np.minimum(np.floor(values * n_bins).astype(int), n_bins - 1)
    bins = []
    for b in range(n_bins):
        member = index == b
        count = int(member.sum())
        bins.append(
            {
                "bin_lo": b / n_bins,
                "bin_hi": (b + 1) / n_bins,
                "count": count,
                "mean_score": float(values[member].mean()) if count else None,
                "native_rate": float(positive[member].mean()) if count else None,
            }
        )
    return bins


def expected_calibration_error(bins: Sequence[dict[str, Any]]) -> float | None:
    """Count-weighted mean of ``|mean_score - native_rate|`` over the bins; ``None`` when empty."""
    total = sum(b["count"] for b in bins)
    if not total:
        return None
    return float(
        sum(b["count"] * abs(b["mean_score"] - b["native_rate"]) for b in bins if b["count"]) / total
    )


def calibration(
    scores: Sequence[float], labels: Sequence[bool], n_bins: int = DEFAULT_BINS
) -> dict[str, Any]:
    """Every calibration number of one set of judged episodes (see the module docstring).

    Keys: ``n``, ``n_success``, ``n_failure``, ``roc``, ``auroc``, ``best_f1``,
    ``best_youden``, ``brier``, ``ece``, ``reliability``, ``undefined`` (``{key: reason}``
    for each ``None``).
    """
    values, positive = _arrays(scores, labels)
    n_pos, n = int(positive.sum()), len(values)
    roc = roc_curve(values, positive)
    bins = reliability_bins(values, positive, n_bins)
    result = {
        "n": n,
        "n_success": n_pos,
        "n_failure": n - n_pos,
        "roc": roc,
        "auroc": roc_area(roc) if roc is not None else None,
        "best_f1": best_f1(values, positive),
        "best_youden": best_youden(values, positive),
        "brier": brier(values, positive),
        "ece": expected_calibration_error(bins),
        "reliability": bins,
    }
    result["undefined"] = {k: _why_undefined(k, n, n_pos) for k, v in result.items() if v is None}
    return result


def _why_undefined(key: str, n: int, n_pos: int) -> str:
    """The sentence saying why ``key`` is ``None`` for ``n`` episodes, ``n_pos`` of them successes."""
    if n == 0:
        return "no judged episode"
    if key == "best_f1" or n_pos == 0:
        return f"no native success among the {n} judged episodes"
    return f"no native failure among the {n} judged episodes"


def auroc_interval(
    scores: Sequence[float], labels: Sequence[bool], draws: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float] | None:
    """A percentile bootstrap interval of the AUROC: episodes redrawn with replacement within each
    class (so every draw has both), ``draws`` times from ``seed``; ``None`` without both classes.
    ``ValueError`` for a ``level`` outside (0, 1) or ``draws`` below 1."""
    if not 0.0 < level < 1.0 or draws < 1:
        raise ValueError(f"level must lie in (0, 1) and draws be at least 1, got {level} and {draws}.")
    values, positive = _arrays(scores, labels)
    pos, neg = values[positive], values[~positive]
    if not len(pos) or not len(neg):
        return None
    rng = np.random.default_rng(seed)
    areas = []
    for _ in range(draws):
        p, q = rng.choice(pos, len(pos)), rng.choice(neg, len(neg))
        # the rank AUROC: P(a success scores above a failure), ties counting half
        areas.append(float(((p[:, None] > q[None, :]) + 0.5 * (p[:, None] == q[None, :])).mean()))
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(areas, [tail, 100 - tail])
    return float(low), float(high)
