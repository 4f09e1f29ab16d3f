"""The fine-tune's check of itself: the served judge must answer its training examples as the
trainer read them. Pure functions.

After training, the evaluation's server of the fine-tuned checkpoint (the saved, merged weights,
the server's own decoding, processor and batching; ``--backend``, by default ``qwen_vl_hf``, the
backend the trainer's inputs and readout are built from) judges every training example too, and the
command compares each served score with the trainer's readout of the same example after the last
epoch (``finetune.json``'s ``train_scores[].after``). Any step that differs between the two paths
(the inputs, the vision encoder, the readout, the merge, the save) shows up here as a difference in
the one place where the trained judge is known to have an answer: what it was trained to say. The
served scores also give the separation of the training classes as served (the lowest success, the
highest failure), which is what a user of the judge gets.

Beyond ``tolerance`` on any example, or a training example the server could not judge, the check
fails: the command says which examples and by how much, and exits with
:data:`reward_eval.exit_statuses.EXIT_SERVING_SKEW`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reward_eval.finetune.metrics import separation


def serving_check(
    served: Sequence[Mapping[str, Any]], trainer: Mapping[str, float], tolerance: float, backend: str
) -> dict[str, Any]:
    """The ``serving`` block of the evaluation: every training example's ``trainer`` readout and
    ``served`` score (``None``: the call failed) with their ``diff``; ``max_abs_diff`` over the
    judged ones, ``fallbacks``, the ``separation`` as served, the ``backend`` that served, the
    ``tolerance`` and ``passed``.

    ``served`` are the server's judged training examples (``video``, ``source``, ``label``,
    ``score``), ``trainer`` maps each example's video to the trainer's readout."""
    rows = []
    for judged in served:
        score, readout = judged["score"], trainer[judged["video"]]
        rows.append(
            {
                "video": Path(judged["video"]).name,
                "source": judged["source"],
                "label": judged["label"],
                "trainer": readout,
                "served": score,
                "diff": None if score is None else abs(score - readout),
            }
        )
    diffs = [r["diff"] for r in rows if r["diff"] is not None]
    scored = [r for r in rows if r["served"] is not None]
    largest = max(diffs) if diffs else None
    fallbacks = len(rows) - len(scored)
    return {
        "backend": backend,
        "tolerance": tolerance,
        "max_abs_diff": largest,
        "fallbacks": fallbacks,
        "separation": separation([r["served"] for r in scored], [r["label"] for r in scored]),
        "passed": bool(rows) and fallbacks == 0 and largest is not None and largest <= tolerance,
        "examples": rows,
    }


def skew_message(check: Mapping[str, Any]) -> str | None:
    """One sentence saying why the check failed (``None`` when it passed)."""
    if check["passed"]:
        return None
    rows = check["examples"]
    if not rows:
        return "the served judge was asked no training example, so nothing checks it against the trainer"
    if check["fallbacks"]:
        return (
            f"the served fine-tuned judge could not score {check['fallbacks']} of its {len(rows)} training "
            "examples (see finetune/server_fine_tuned.log)"
        )
    worst = max(rows, key=lambda r: r["diff"])
    return (
        f"the served fine-tuned judge answers its training examples up to {check['max_abs_diff']:.4f} away "
        f"from the trainer's readout ({check['backend']} server, tolerance {check['tolerance']:g}; worst: "
        f"{worst['video']}, trainer {worst['trainer']:.4f}, served {worst['served']:.4f}): what is served "
        "is not what was trained"
    )


def check_line(check: Mapping[str, Any]) -> str:
    """The terminal's line about the check, passed or not."""
    n, largest = len(check["examples"]), check["max_abs_diff"]
    far = "n/a" if largest is None else f"{largest:.2g}"
    sep = check["separation"]
    low, high = sep["min_success"], sep["max_failure"]
    split = (
        ""
        if low is None or high is None
        else f"; served: lowest success {low:.4f}, highest failure {high:.4f}"
    )
    verdict = "ok" if check["passed"] else "FAILED"
    return (
        f"served judge on its {n} training examples: largest |served - trainer| {far} "
        f"({check['backend']} server, tolerance {check['tolerance']:g}): {verdict}{split}"
    )
