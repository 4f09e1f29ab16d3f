"""The numbers of a judge audit: pure functions over the judged cases of :mod:`..commands.audit`.

A case is one call: an episode as judged (``original``: a kept video judged again), a
counterfactual of a native success (one per registered perturbation, see
:mod:`.perturbations`), or a native failure judged again (``failure``, the reference). Its
keys: ``perturbation``, ``task_id``, ``task_text``, ``score`` and ``original_score`` (``None``
for a failed call, the client's fallback), plus where it came from (``log``, ``record``).

Every row but ``original`` should be judged a failure, so its positive rate at the threshold
(:func:`vlm_reward.verdict.is_success`) is a false-positive rate; ``original``
(the native successes) gives the true-positive rate on the same judge for comparison.
``mean_drop`` is the mean of ``original_score - score`` over the counterfactuals whose both
calls were judged: how much the perturbation lowered the score. Failed calls are counted
apart and left out, as in :mod:`.metrics`.

A judge that scores frames one by one (a progress judge: a case's ``frame_scores``) is also read
frame by frame: ``mean_frame_voc`` is the mean Spearman correlation of a row's frame scores with
the frames' order (:func:`.frame_progress.frame_voc`; ``None`` for a judge without frame scores
or a row where none is defined). A progress judge reads a ``reversed`` success as progress undone
(a VOC near -1, a low end score), never as progress.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reward_eval.analysis.frame_progress import frame_voc
from reward_eval.analysis.metrics import task_key, task_order
from reward_eval.analysis.perturbations import FAILURE
from vlm_reward.verdict import is_success

ORIGINAL = "original"
WORST_CASES = 2  # per row: the counterfactuals the judge liked best, drawn as filmstrips


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def row_block(cases: Sequence[Mapping[str, Any]], threshold: float) -> dict[str, Any]:
    """``episodes``, ``judged``, ``fallbacks``, ``positive_rate``, ``mean_score``, ``mean_drop`` and
    ``mean_frame_voc`` (``None`` where undefined) of one row's cases."""
    scores = [c["score"] for c in cases if c["score"] is not None]
    drops = [
        c["original_score"] - c["score"]
        for c in cases
        if c["perturbation"] not in (ORIGINAL, FAILURE)
        and c["score"] is not None
        and c.get("original_score") is not None
    ]
    positives = sum(is_success(s, threshold) for s in scores)
    framed = [c["frame_scores"] for c in cases if c["score"] is not None and c.get("frame_scores")]
    vocs = [value for value, _ in map(frame_voc, framed) if value is not None]
    return {
        "episodes": len(cases),
        "judged": len(scores),
        "fallbacks": len(cases) - len(scores),
        "positive_rate": positives / len(scores) if scores else None,
        "mean_score": _mean(scores),
        "mean_drop": _mean(drops),
        "mean_frame_voc": _mean(vocs),
    }


def _rows(cases: Sequence[Mapping[str, Any]], names: Sequence[str], threshold: float) -> dict[str, Any]:
    return {name: row_block([c for c in cases if c["perturbation"] == name], threshold) for name in names}


def worst_cases(cases: Sequence[Mapping[str, Any]], name: str, k: int = WORST_CASES) -> list[dict[str, Any]]:
    """The ``k`` judged cases of row ``name`` with the highest score (the smaller drop first on
    a tie, then source order): the counterfactuals that fooled the judge most."""
    judged = [(i, c) for i, c in enumerate(cases) if c["perturbation"] == name and c["score"] is not None]

    def rank(item: tuple[int, Mapping[str, Any]]) -> tuple[float, float, int]:
        i, c = item
        drop = (c.get("original_score") or 0.0) - c["score"]
        return (-c["score"], drop, i)

    return [dict(c) for _, c in sorted(judged, key=rank)[:k]]


def summarize_audit(
    cases: Sequence[Mapping[str, Any]], perturbations: Sequence[str], threshold: float
) -> dict[str, Any]:
    """The audit's summary: ``threshold``, ``rows`` (``original``, each perturbation, ``failure``;
    see :func:`row_block`), ``per_task`` (``task_text`` and the same rows per task id),
    ``worst`` (per row but ``original``: :func:`worst_cases`), ``calls`` and ``fallback_calls``."""
    names = [ORIGINAL, *perturbations, FAILURE]
    per_task = {}
    for key in sorted({task_key(c["task_id"]) for c in cases}, key=task_order):
        task_cases = [c for c in cases if task_key(c["task_id"]) == key]
        texts = [c["task_text"] for c in task_cases if c["perturbation"] == ORIGINAL]
        per_task[key] = {"task_text": texts[0] if texts else "", "rows": _rows(task_cases, names, threshold)}
    return {
        "threshold": threshold,
        "rows": _rows(cases, names, threshold),
        "per_task": per_task,
        "worst": {name: worst_cases(cases, name) for name in names[1:]},
        "calls": len(cases),
        "fallback_calls": sum(c["score"] is None for c in cases),
    }


def rows_above(summary: Mapping[str, Any], rate: float) -> list[str]:
    """The rows (every one but ``original``) whose false-positive rate exceeds ``rate``: what
    ``audit --fail-above RATE`` gates on."""
    return [
        name
        for name, block in summary["rows"].items()
        if name != ORIGINAL and block["positive_rate"] is not None and block["positive_rate"] > rate
    ]
