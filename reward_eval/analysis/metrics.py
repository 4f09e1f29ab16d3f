"""How well the VLM's judgement matches the simulator's success: pure functions over episode records.

The input is the episode records the env writes, one per scored episode
(:class:`vlm_reward.client.episode_record.EpisodeRecord`, read by its module's
``read_episode_log``; a decoded line as a mapping is validated into one); only
``task_id``, ``native_success`` and ``vlm_score`` are required, the rest (``task_text``,
``fallback``, ``error``, ``error_kind``, ``latency_s``, ``success_threshold``,
``binary_reward``) is used when present.

**Fallback episodes** carry the fallback score (by default the native success itself), not
the VLM's judgement, so counting them would make a judge that fails every request look
perfect. They are therefore left out of everything that measures the judge: the VLM success
rate, agreement, precision, recall, F1, specificity, AUROC, the mean score by native outcome
and the continuous-mode errors. They count in ``n_episodes``, ``native_success_rate``,
``fallback_count``, ``error_counts``, ``latency`` and ``reward_signal`` (what a training run
would have been fed, fallbacks included). ``n_judged`` is the number of episodes the judge
metrics are computed on.

A block (``summary["overall"]`` and each ``summary["per_task"][str(task_id)]``, the latter
with ``task_text`` too) has these keys; every ratio whose denominator is 0 is ``None``:

- ``n_episodes``, ``n_judged``, ``fallback_count``, ``fallback_rate``
- ``native_success_rate`` (all episodes), ``vlm_success_rate`` (judged: score >= threshold)
- ``agreement``, ``precision``, ``recall``, ``specificity``, ``f1``: VLM success against
  native success as the ground truth; ``tp``, ``fp``, ``tn``, ``fn`` counts
- ``auroc``: of the continuous score against native success (``None`` with one class only)
- ``mean_vlm_score_native_success``, ``mean_vlm_score_native_failure``
- ``continuous``: ``mean_score``, ``mean_abs_error`` (mean |score - native|), ``brier``
  (mean (score - native)^2): how far the score used as a continuous reward is from the truth
- ``reward_signal``: mean per-episode success signal in each mode, fallbacks included:
  ``native``, ``binary`` (1[score >= threshold]) and ``continuous`` (the score)
- ``error_counts``: ``{error_kind: count}`` (``"unknown"`` for an error without a kind)
- ``latency``: ``n``, ``mean``, ``p50``, ``p90``, ``p99``, ``max`` in seconds (``None`` when
  no episode has a latency)

``summary["calibration"]`` is :func:`.calibration.calibration` of the judged episodes (all
tasks): ROC, the best-F1 and best-Youden thresholds, Brier score and reliability bins.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reward_eval.analysis.calibration import calibration
from reward_eval.analysis.judges import judges_of
from vlm_reward.client.episode_record import EpisodeRecord, as_record
from vlm_reward.verdict import DEFAULT_SUCCESS_THRESHOLD, is_success

Record = EpisodeRecord | Mapping[str, Any]  # a record, or a decoded line validated into one


@dataclass(frozen=True)
class _Episode:
    """The fields of one record the metrics need, validated."""

    task_key: str
    task_text: str
    native: bool
    score: float
    fallback: bool
    error_kind: str | None
    latency_s: float | None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _parse_record(record: EpisodeRecord) -> _Episode:
    latency = record.latency_s
    return _Episode(
        task_key=task_key(record.task_id),
        task_text=str(record.task_text or ""),
        native=record.native_success,
        score=float(record.vlm_score),
        fallback=record.fallback,
        error_kind=record.error_kind or ("unknown" if record.error else None),
        latency_s=float(latency) if _is_number(latency) else None,
    )


def as_records(records: Sequence[Record]) -> list[EpisodeRecord]:
    """``records`` as :class:`EpisodeRecord`; errors name the record's index."""
    return [as_record(r, f"episode record {i}") for i, r in enumerate(records)]


def task_key(task_id: Any) -> str:
    """The ``per_task`` key of a task id: its string form (JSON object keys are strings)."""
    return str(task_id)


def resolve_threshold(records: Sequence[Record], threshold: float | None = None) -> tuple[float, str]:
    """The success threshold to judge with and where it came from (``argument``, ``records``, ``default``).

    Without an explicit ``threshold`` the records' ``success_threshold`` is used (the one the
    run trained with); records from runs with different thresholds are ambiguous and raise
    ``ValueError`` asking for an explicit one. No record carries one: 0.5, the env default.
    """
    if threshold is not None:
        if not (_is_number(threshold) and 0.0 <= threshold <= 1.0):
            raise ValueError(f"threshold must be a number in [0, 1] or None, got {threshold!r}.")
        return float(threshold), "argument"
    found = {float(r.success_threshold) for r in as_records(records) if _is_number(r.success_threshold)}
    if len(found) > 1:
        raise ValueError(
            f"the records carry different success_threshold values {sorted(found)}; "
            "pass threshold= to pick one."
        )
    if found:
        return found.pop(), "records"
    return DEFAULT_SUCCESS_THRESHOLD, "default"


def vlm_success(record: Record, threshold: float) -> bool:
    """The VLM's verdict on one record at ``threshold`` (not the logged ``vlm_success``,
    which used the run's threshold)."""
    return is_success(as_record(record).vlm_score, threshold)


def disagreements(records: Sequence[Record], threshold: float) -> list[int]:
    """Indices of the judged (non-fallback) records whose VLM verdict differs from the native one."""
    return [
        i
        for i, r in enumerate(as_records(records))
        if not r.fallback and is_success(r.vlm_score, threshold) != r.native_success
    ]


def auroc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """Area under the ROC curve of ``scores`` for the positive ``labels``; ``None`` with one class.

    Rank form of the Mann-Whitney U statistic: the probability that a random positive scores
    higher than a random negative, ties counting one half (tied scores get their average
    rank). So a perfect ranking gives 1.0, an inverted one 0.0 and constant scores 0.5.
    """
    values = np.asarray(scores, dtype=np.float64)
    positive = np.asarray(labels, dtype=bool)
    if values.shape != positive.shape or values.ndim != 1:
        raise ValueError(
            f"scores and labels must be 1-D of equal length, got {values.shape} and {positive.shape}."
        )
    n_pos = int(positive.sum())
    n_neg = len(values) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    _, group, counts = np.unique(values, return_inverse=True, return_counts=True)
    # 1-based ranks: group g holds ranks end-count+1 .. end, whose mean is end - (count - 1) / 2.
    ends = np.cumsum(counts)
    ranks = (ends - (counts - 1) / 2.0)[group]
    u = ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def _ratio(num: float, den: float) -> float | None:
    return float(num / den) if den else None


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def _classification(judged: Sequence[_Episode], threshold: float) -> dict[str, Any]:
    """Confusion counts and the ratios built on them; native success is the ground truth."""
    pred = [is_success(e.score, threshold) for e in judged]
    truth = [e.native for e in judged]
    tp = sum(p and t for p, t in zip(pred, truth, strict=True))
    fp = sum(p and not t for p, t in zip(pred, truth, strict=True))
    fn = sum(t and not p for p, t in zip(pred, truth, strict=True))
    tn = len(judged) - tp - fp - fn
    return {
        "vlm_success_rate": _ratio(tp + fp, len(judged)),
        "agreement": _ratio(tp + tn, len(judged)),
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "specificity": _ratio(tn, tn + fp),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
        "auroc": auroc([e.score for e in judged], truth),
        "tp": tp,
        "fp": fp,
        "tn": tn,
        "fn": fn,
        "mean_vlm_score_native_success": _mean([e.score for e in judged if e.native]),
        "mean_vlm_score_native_failure": _mean([e.score for e in judged if not e.native]),
    }


def _continuous(judged: Sequence[_Episode]) -> dict[str, float | None]:
    """Errors of the raw score as a continuous estimate of the native 0/1 outcome."""
    errors = np.array([e.score - float(e.native) for e in judged])
    return {
        "mean_score": _mean([e.score for e in judged]),
        "mean_abs_error": _mean(np.abs(errors)),
        "brier": _mean(errors**2),
    }


def _latency(values: Sequence[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "mean": None, "p50": None, "p90": None, "p99": None, "max": None}
    p50, p90, p99 = np.percentile(values, [50, 90, 99])
    return {
        "n": len(values),
        "mean": float(np.mean(values)),
        "p50": float(p50),
        "p90": float(p90),
        "p99": float(p99),
        "max": float(max(values)),
    }


def _block(episodes: Sequence[_Episode], threshold: float) -> dict[str, Any]:
    """All metrics of one group of episodes (overall or one task)."""
    judged = [e for e in episodes if not e.fallback]
    n = len(episodes)
    return {
        "n_episodes": n,
        "n_judged": len(judged),
        "fallback_count": n - len(judged),
        "fallback_rate": _ratio(n - len(judged), n),
        "native_success_rate": _ratio(sum(e.native for e in episodes), n),
        **_classification(judged, threshold),
        "continuous": _continuous(judged),
        "reward_signal": {
            "native": _ratio(sum(e.native for e in episodes), n),
            "binary": _ratio(sum(is_success(e.score, threshold) for e in episodes), n),
            "continuous": _mean([e.score for e in episodes]),
        },
        "error_counts": dict(sorted(Counter(e.error_kind for e in episodes if e.error_kind).items())),
        "latency": _latency([e.latency_s for e in episodes if e.latency_s is not None]),
    }


def task_order(key: str) -> tuple[int, float, str]:
    """Numeric task ids in numeric order (2 before 10), anything else after them by name."""
    try:
        return (0, float(key), key)
    except ValueError:
        return (1, 0.0, key)


def summarize(records: Sequence[Record], threshold: float | None = None) -> dict[str, Any]:
    """JSON-serializable metrics of the VLM judge, overall and per task (see the module docstring).

    ``threshold`` overrides the records' ``success_threshold`` (see :func:`resolve_threshold`);
    VLM success is recomputed as ``vlm_score >= threshold``, the logged ``vlm_success`` is not
    used. Raises ``ValueError`` for an empty list (there is nothing to evaluate, and a summary
    of ``None``s would hide that the run produced no episodes) and for a malformed record.
    """
    if isinstance(records, (str, bytes)) or not isinstance(records, Sequence):
        raise TypeError(f"records must be a sequence of episode records, got {type(records).__name__}.")
    if not records:
        raise ValueError("no episode records to summarize; the episode log is empty.")
    typed = as_records(records)
    episodes = [_parse_record(r) for r in typed]
    threshold, source = resolve_threshold(typed, threshold)
    by_task: dict[str, list[_Episode]] = {}
    for episode in episodes:
        by_task.setdefault(episode.task_key, []).append(episode)
    per_task = {}
    for key in sorted(by_task, key=task_order):
        texts = Counter(e.task_text for e in by_task[key] if e.task_text)
        per_task[key] = {
            "task_text": texts.most_common(1)[0][0] if texts else "",
            **_block(by_task[key], threshold),
        }
    modes = {r.binary_reward for r in typed if r.binary_reward is not None}
    judged = [e for e in episodes if not e.fallback]
    return {
        "threshold": threshold,
        "threshold_source": source,
        "reward_modes_in_records": sorted("binary" if m else "continuous" for m in modes),
        "fallbacks_in_classification": False,
        "overall": _block(episodes, threshold),
        "per_task": per_task,
        "calibration": calibration([e.score for e in judged], [e.native for e in judged]),
        "judges": judges_of(typed),
    }
