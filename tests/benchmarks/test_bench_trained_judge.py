"""benchmarks.bench_trained_judge's per-set block: what a 0/1 reward at 0.5 pays, beside the AUROC."""

from __future__ import annotations

import pytest

from benchmarks.bench_trained_judge import THRESHOLD, auroc_block


def rows(*pairs: tuple[float | None, bool]) -> list[dict[str, object]]:
    return [{"score": score, "success": success} for score, success in pairs]


CASES = [
    # two successes, one paid; three failures, one paid; a fallback left out of both
    (
        "mixed",
        rows((0.9, True), (0.2, True), (0.7, False), (0.1, False), (0.0, False), (None, True)),
        0.5,
        1 / 3,
    ),
    ("threshold-pays", rows((THRESHOLD, True), (THRESHOLD, False)), 1.0, 1.0),
    ("no-failure", rows((0.9, True), (0.1, True)), 0.5, None),
    ("no-success", rows((0.9, False), (0.1, False)), None, 0.5),
]


@pytest.mark.parametrize(("name", "scored", "recall", "fpr"), CASES, ids=[c[0] for c in CASES])
def test_recall_and_false_positive_rate_at_the_threshold(
    name: str, scored: list[dict[str, object]], recall: float | None, fpr: float | None
) -> None:
    block = auroc_block(scored)
    assert block["recall"] == (None if recall is None else pytest.approx(recall))
    assert block["false_positive_rate"] == (None if fpr is None else pytest.approx(fpr))
    assert block["fallbacks"] == sum(r["score"] is None for r in scored)
