"""Progress order of a judge: does its score rise as an episode goes on? Pure functions.

``rescore --prefixes K`` judges the first 1/K, 2/K, ..., K/K of each kept video's frames.
A judge that reads progress scores later prefixes of a successful episode higher. **VOC**
(value-order correlation) of one episode is the Spearman rank correlation between the
prefix's length and its score: +1 the score rises with every prefix, -1 it falls, 0 no
monotone relation.

Definitions (each tested):

- Prefix ``i`` of ``n`` frames holds the first ``ceil(i * n / K)`` frames (at least 1).
  With fewer frames than ``K`` some prefixes hold the same frames; they are judged once
  (:func:`prefix_lengths` drops the repeats), so an episode gets at most ``K`` calls.
- Spearman: the Pearson correlation of the average ranks (tied scores share their mean rank).
- A failed call (fallback) has no score (``None``); it is left out of the VOC.
- VOC is undefined (``None``, with a reason from :data:`REASONS`) with fewer than two judged
  prefixes (``K = 1``, a one-frame video, failed calls) or when every judged prefix got the
  same score (no order to correlate). It is never NaN.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from reward_eval.analysis.metrics import task_order

FEW_PREFIXES = "fewer than 2 judged prefixes"
CONSTANT = "the same score at every judged prefix"
UNREADABLE = "the kept video could not be read"
REASONS = (FEW_PREFIXES, CONSTANT, UNREADABLE)
OUTCOMES = {"native_success": True, "native_failure": False}


def prefix_lengths(n_frames: int, k: int) -> list[int]:
    """The distinct frame counts of the ``k`` prefixes of an ``n_frames``-frame video, ascending."""
    for name, value in (("n_frames", n_frames), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    return sorted({max(1, -(-i * n_frames // k)) for i in range(1, k + 1)})


def average_ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks of ``values``; tied values get the mean of the ranks they span."""
    array = np.asarray(values, dtype=np.float64)
    _, group, counts = np.unique(array, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return (ends - (counts - 1) / 2.0)[group.reshape(-1)]


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman rank correlation of ``x`` and ``y``; ``None`` for fewer than 2 pairs or a constant side."""
    if len(x) != len(y):
        raise ValueError(f"x and y must have equal length, got {len(x)} and {len(y)}.")
    if len(x) < 2:
        return None
    rx, ry = average_ranks(x), average_ranks(y)
    dx, dy = rx - rx.mean(), ry - ry.mean()
    sxx, syy = float(dx @ dx), float(dy @ dy)
    if sxx == 0.0 or syy == 0.0:
        return None
    return float(dx @ dy) / math.sqrt(sxx * syy)


def voc(prefix_frames: Sequence[int], scores: Sequence[float | None]) -> tuple[float | None, str | None]:
    """``(VOC, None)`` of one episode, or ``(None, reason)``; ``None`` scores (fallbacks) are skipped."""
    if len(prefix_frames) != len(scores):
        raise ValueError(f"{len(prefix_frames)} prefixes but {len(scores)} scores.")
    pairs = [(x, s) for x, s in zip(prefix_frames, scores, strict=True) if s is not None]
    if len(pairs) < 2:
        return None, FEW_PREFIXES
    value = spearman([x for x, _ in pairs], [s for _, s in pairs])
    return (value, None) if value is not None else (None, CONSTANT)


def _stats(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``n_episodes``, ``n_voc`` (defined), ``mean_voc`` (``None`` when none is) and
    ``undefined`` (``{reason: episodes}``) of a group of per-episode results."""
    values = [e["voc"] for e in episodes if e["voc"] is not None]
    return {
        "n_episodes": len(episodes),
        "n_voc": len(values),
        "mean_voc": float(np.mean(values)) if values else None,
        "undefined": dict(sorted(Counter(e["voc_undefined"] for e in episodes if e["voc"] is None).items())),
    }


def _groups(episodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The stats of all episodes and of the native successes and failures apart."""
    split = {name: [e for e in episodes if bool(e["native_success"]) is v] for name, v in OUTCOMES.items()}
    return {"all": _stats(episodes), **{name: _stats(group) for name, group in split.items()}}


def summarize_progress(episodes: Sequence[Mapping[str, Any]], k: int) -> dict[str, Any]:
    """The ``progress`` block of ``summary.json`` from per-episode results.

    Each episode needs ``task_id``, ``native_success``, ``scores`` (``None`` per failed
    call), ``voc`` and ``voc_undefined`` (``task_text`` is used when present). Returns
    ``prefixes`` (``k``), ``calls`` (prefixes judged), ``fallback_calls``, ``overall`` and
    ``per_task[str(task_id)]`` (with ``task_text``), each ``{"all", "native_success",
    "native_failure"}`` of :func:`_stats`.
    """
    by_task: dict[str, list[Mapping[str, Any]]] = {}
    for episode in episodes:
        by_task.setdefault(str(episode["task_id"]), []).append(episode)
    per_task = {}
    for key in sorted(by_task, key=task_order):
        texts = [str(e.get("task_text") or "") for e in by_task[key]]
        per_task[key] = {"task_text": next((t for t in texts if t), ""), **_groups(by_task[key])}
    scores = [s for e in episodes for s in e["scores"]]
    return {
        "prefixes": k,
        "calls": len(scores),
        "fallback_calls": sum(s is None for s in scores),
        "overall": _groups(episodes),
        "per_task": per_task,
    }
