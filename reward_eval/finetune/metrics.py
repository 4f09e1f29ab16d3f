"""The before/after numbers of one judge on the held-out examples: pure functions.

A judged example is a mapping with ``label`` (should be judged a success), ``source``
(``original``, ``failure`` or a perturbation), ``episode``, ``task_id``, ``task_text`` and
``score`` (``None`` for a failed call, counted as a fallback and left out, as the evaluation
reports do). The numbers are the project's own: AUROC, Brier score and the best-F1 threshold from
:func:`..analysis.calibration.calibration`, and the audit's positive rate per row from
:func:`..analysis.audit.summarize_audit` (for every row but ``original`` a false-positive rate:
the perturbations and the native failures judged at the threshold).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reward_eval.analysis.audit import summarize_audit
from reward_eval.analysis.calibration import calibration
from reward_eval.finetune.dataset import HELD_OUT, REENCODED, TEST

# The rows of the side-by-side table, in order, and how to read each from a judge's block.
TABLE_ROWS: tuple[tuple[str, str], ...] = (
    ("AUROC", "auroc"),
    ("Brier", "brier"),
    ("best F1", "best_f1"),
    ("best-F1 threshold", "best_f1_threshold"),
)


def audit_cases(judged: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The judged examples as the audit's cases (``perturbation``, ``original_score``: the score
    of the episode itself re-encoded, as its counterfactuals are, for the drop, as the audit
    measures it; an example without ``encoding`` counts as re-encoded)."""
    own = {
        j["episode"]: j["score"]
        for j in judged
        if j["source"] in ("original", "failure") and j.get("encoding", REENCODED) == REENCODED
    }
    return [
        {
            "perturbation": j["source"],
            "task_id": j["task_id"],
            "task_text": j["task_text"],
            "score": j["score"],
            "original_score": own.get(j["episode"]),
        }
        for j in judged
    ]


def judge_block(
    judged: Sequence[Mapping[str, Any]], perturbations: Sequence[str], threshold: float
) -> dict[str, Any]:
    """One judge's numbers: ``n``, ``fallbacks``, ``auroc``, ``brier``, ``best_f1`` and
    ``best_f1_threshold`` (``None`` where undefined, with ``undefined`` saying why), and
    ``audit``: row -> positive rate at ``threshold`` (``None`` for a row without judged examples)."""
    scored = [j for j in judged if j["score"] is not None]
    cal = calibration([j["score"] for j in scored], [bool(j["label"]) for j in scored])
    best = cal["best_f1"]
    rows = summarize_audit(audit_cases(judged), perturbations, threshold)["rows"]
    return {
        "n": len(judged),
        "fallbacks": len(judged) - len(scored),
        "auroc": cal["auroc"],
        "brier": cal["brier"],
        "best_f1": best["f1"] if best else None,
        "best_f1_threshold": best["threshold"] if best else None,
        "undefined": cal["undefined"],
        "audit": {name: block["positive_rate"] for name, block in rows.items() if block["episodes"]},
    }


def separation(scores: Sequence[float], labels: Sequence[bool]) -> dict[str, float | None]:
    """How far apart a judge puts the classes: the lowest success score, the highest failure
    score, their margin (positive: every success above every failure) and the AUROC."""
    positives = [s for s, label in zip(scores, labels, strict=True) if label]
    negatives = [s for s, label in zip(scores, labels, strict=True) if not label]
    low, high = (min(positives) if positives else None), (max(negatives) if negatives else None)
    return {
        "min_success": low,
        "max_failure": high,
        "margin": None if low is None or high is None else low - high,
        "auroc": calibration(list(scores), list(labels))["auroc"],
    }


def measured_rows(counterfactuals: Sequence[str], wrong_instructions: int) -> list[str]:
    """The rows of the judges' tables: the counterfactuals, and the wrong instructions when asked for."""
    from reward_eval.finetune.instructions import WRONG_INSTRUCTION

    return [*counterfactuals, *([WRONG_INSTRUCTION] if wrong_instructions else [])]


def split_blocks(
    judged: Mapping[str, Sequence[Mapping[str, Any]]], perturbations: Sequence[str], threshold: float
) -> dict[str, Any]:
    """``{judge: block}`` over the held-out examples, and ``test: {judge: block}`` when there are test
    examples (:func:`.metrics.judge_block`; ``judged``: judge -> its judged examples)."""

    def blocks(split: str) -> dict[str, Any]:
        return {
            name: judge_block([j for j in rows if j["split"] == split], perturbations, threshold)
            for name, rows in judged.items()
        }

    has_test = any(j["split"] == TEST for rows in judged.values() for j in rows)
    return {**blocks(HELD_OUT), **({TEST: blocks(TEST)} if has_test else {})}
