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

The training examples are the fine-tune's own files, so a second block, :func:`source_check`,
scores the source episodes themselves: every training episode's kept video, where the run left
it, sent through the env's own client as ``rescore`` sends it. Each must be served as the trainer
read the episode (its ``sent`` example, the same bytes) within ``tolerance``, and judged alike
(the same side of the success threshold) as its re-encode, which is how the audit and the
counterfactuals encode it: otherwise the encoding, not the content, decides the answer (issue 55:
a judge trained on re-encodes alone read 0.99 for its training success and served the episode
the env sent 0.01). Either failing is the same exit status.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from reward_eval.analysis.audit import ORIGINAL
from reward_eval.analysis.perturbations import FAILURE
from reward_eval.finetune.dataset import REENCODED, SENT, Example
from reward_eval.finetune.metrics import separation


def _compared(score: float | None, readout: float) -> dict[str, Any]:
    """The trainer's ``readout`` beside the ``served`` score (``None``: the call failed) and their
    absolute ``diff``: one row's comparison in either check."""
    return {"trainer": readout, "served": score, "diff": None if score is None else abs(score - readout)}


def _served_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Over rows of :func:`_compared`: the largest ``diff``, the failed calls and the training
    classes' separation as served."""
    scored = [r for r in rows if r["served"] is not None]
    return {
        "max_abs_diff": max((r["diff"] for r in scored), default=None),
        "fallbacks": len(rows) - len(scored),
        "separation": separation([r["served"] for r in scored], [r["label"] for r in scored]),
    }


def serving_check(
    served: Sequence[Mapping[str, Any]], trainer: Mapping[str, float], tolerance: float, backend: str
) -> dict[str, Any]:
    """The ``serving`` block of the evaluation: every training example's ``trainer`` readout and
    ``served`` score (``None``: the call failed) with their ``diff``; ``max_abs_diff`` over the
    judged ones, ``fallbacks``, the ``separation`` as served, the ``backend`` that served, the
    ``tolerance`` and ``passed``.

    ``served`` are the server's judged training examples (``video``, ``source``, ``label``,
    ``score``), ``trainer`` maps each example's video to the trainer's readout."""
    rows = [
        {
            "video": Path(judged["video"]).name,
            "source": judged["source"],
            "label": judged["label"],
            **_compared(judged["score"], trainer[judged["video"]]),
        }
        for judged in served
    ]
    summary = _served_summary(rows)
    largest = summary["max_abs_diff"]
    return {
        "backend": backend,
        "tolerance": tolerance,
        **summary,
        "passed": bool(rows) and summary["fallbacks"] == 0 and largest is not None and largest <= tolerance,
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


OWN = (ORIGINAL, FAILURE)  # an episode's own examples; the others are made of it


def _sent_itself(x: Example) -> bool:
    """The episode itself as the env sent it (not a wrong instruction on the same bytes)."""
    return x.encoding == SENT and x.source in OWN


def source_examples(train: Sequence[Example]) -> list[Example]:
    """The training episodes as the env sent them: each ``sent`` example pointing at its kept video
    where the run left it (the file the env's client posted), not at the data set's copy."""
    return [replace(x, video=x.source_video) for x in train if _sent_itself(x)]


def sent_readouts(train: Sequence[Example], trainer: Mapping[str, float]) -> dict[str, float]:
    """episode -> the trainer's readout of its ``sent`` example (``trainer``: video -> readout)."""
    return {x.episode: trainer[x.video] for x in train if _sent_itself(x)}


def reencoded_scores(served: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """episode -> the served score of the episode itself re-encoded (``original`` or ``failure``)."""
    return {j["episode"]: j["score"] for j in served if j["source"] in OWN and j["encoding"] == REENCODED}


def source_rows(
    served: Sequence[Mapping[str, Any]],
    trainer: Mapping[str, float],
    reencoded: Mapping[str, float | None],
    threshold: float,
) -> list[dict[str, Any]]:
    """One row per source episode (see :func:`source_check`); ``KeyError`` for an episode without a
    trainer readout or a re-encode."""
    rows = []
    for judged in served:
        score, episode = judged["score"], judged["episode"]
        readout, again = trainer[episode], reencoded[episode]
        both = score is not None and again is not None
        rows.append(
            {
                "episode": episode,
                "video": judged["video"],
                "source": judged["source"],
                "label": judged["label"],
                **_compared(score, readout),
                "reencoded": again,
                "codec_diff": abs(score - again) if both else None,
                "same_verdict": (score >= threshold) == (again >= threshold) if both else None,
            }
        )
    return rows


def source_check(
    served: Sequence[Mapping[str, Any]],
    trainer: Mapping[str, float],
    reencoded: Mapping[str, float | None],
    tolerance: float,
    threshold: float,
) -> dict[str, Any]:
    """The ``sources`` block of the evaluation: the training episodes as the env sent them, served.

    ``served``: the server's scores of the kept videos (``episode``, ``video``, ``source``, ``label``,
    ``score``, ``None`` for a failed call); ``trainer``: episode -> the trainer's readout of its
    ``sent`` example; ``reencoded``: episode -> the served score of its re-encode. Every row has
    ``diff`` (served - trainer) and ``codec_diff`` (served - re-encode, absolute) and
    ``same_verdict`` (both on one side of ``threshold``). ``passed``: something was asked, every call
    answered, every ``diff`` within ``tolerance`` and every verdict the same. ``ValueError`` for a
    tolerance or threshold outside [0, 1]."""
    if not (0.0 <= tolerance <= 1.0 and 0.0 <= threshold <= 1.0):
        raise ValueError(f"tolerance and threshold must lie in [0, 1], got {tolerance} and {threshold}.")
    rows = source_rows(served, trainer, reencoded, threshold)
    summary = _served_summary(rows)
    summary["fallbacks"] += sum(r["reencoded"] is None for r in rows)
    codec = [r["codec_diff"] for r in rows if r["codec_diff"] is not None]
    flips = sum(r["same_verdict"] is False for r in rows)
    largest = summary["max_abs_diff"]
    return {
        "tolerance": tolerance,
        "threshold": threshold,
        **summary,
        "max_codec_diff": max(codec) if codec else None,
        "codec_flips": flips,
        "passed": bool(rows)
        and not summary["fallbacks"]
        and not flips
        and largest is not None
        and largest <= tolerance,
        "examples": rows,
    }


def source_skew_message(check: Mapping[str, Any]) -> str | None:
    """One sentence saying why the sources' check failed (``None`` when it passed)."""
    if check["passed"]:
        return None
    rows = check["examples"]
    if not rows:
        return "no training episode was served as the env sent it, so nothing checks the judge on them"
    if check["fallbacks"]:
        return (
            f"the served fine-tuned judge could not score {check['fallbacks']} of its training episodes as "
            "the env sent them or re-encoded (see finetune/server_fine_tuned.log)"
        )
    worst = max(rows, key=lambda r: r["diff"])
    if worst["diff"] > check["tolerance"]:
        return (
            f"the served fine-tuned judge scores its training episodes as the env sent them up to "
            f"{worst['diff']:.4f} away from the trainer's readout (tolerance {check['tolerance']:g}; worst: "
            f"{Path(worst['video']).name}, trainer {worst['trainer']:.4f}, served {worst['served']:.4f}): "
            "what the env sends is not what was trained"
        )
    flip = next(r for r in rows if r["same_verdict"] is False)
    return (
        f"the served fine-tuned judge gives {check['codec_flips']} training episode(s) another verdict "
        f"re-encoded than as the env sent them (threshold {check['threshold']:g}; first: "
        f"{Path(flip['video']).name}, sent {flip['served']:.4f}, re-encoded {flip['reencoded']:.4f}): "
        "the encoding decides the answer"
    )


def source_line(check: Mapping[str, Any]) -> str:
    """The terminal's line about the sources' check, passed or not."""
    n, sep = len(check["examples"]), check["separation"]
    far = "n/a" if check["max_abs_diff"] is None else f"{check['max_abs_diff']:.2g}"
    codec = "n/a" if check["max_codec_diff"] is None else f"{check['max_codec_diff']:.2g}"
    low, high = sep["min_success"], sep["max_failure"]
    split = "" if low is None or high is None else f"; lowest success {low:.4f}, highest failure {high:.4f}"
    verdict = "ok" if check["passed"] else "FAILED"
    return (
        f"served judge on its {n} training episodes as the env sent them: largest |served - trainer| {far}, "
        f"largest |sent - re-encoded| {codec}, {check['codec_flips']} verdict(s) changed by the encoding: "
        f"{verdict}{split}"
    )
