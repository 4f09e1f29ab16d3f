"""How a progress judge is measured: its per-frame scores against the simulator's progress. Pure.

A judge that scores frames one by one (the ``resnet`` backend: ``frame_scores`` on every judged
line of the episode log) can be measured as progress judges are measured, frame by frame; a judge
of the whole video (a VLM) only through its episode score and ``rescore --prefixes``
(:mod:`.progress`, the one progress measure every judge shares). Three measures, each tested:

- **Pearson with goal_fraction**: the Pearson correlation of every frame score with the share of
  the task's goal predicates that hold at that frame (:data:`GOAL_FRACTION`, the simulator's
  progress: a labelled set's run carries it per frame sent), over all frames of all judged
  episodes that carry both. Frame ``i`` of ``n`` scores is the ``i``-th of the ``n`` evenly spaced
  frames of the video (:func:`vlm_reward.frames.evenly_spaced`, what the server shows), so it is
  paired with the goal fraction of that frame (:func:`aligned`).
- **Per-frame VOC** of a native success: the Spearman correlation of its frame scores with the
  frames' order (:func:`.progress.spearman`; undefined, with a reason, for a constant judge or
  fewer than two frames), averaged over the successes: +1 the score rises with every frame.
- **Ends above the failures**: how many native successes end (their episode score, ``vlm_score``:
  for a frame classifier the score of its last frames) strictly above the median end score of the
  native failures. Needs no frame scores, so every judge has it.

Fallbacks carry no judgement and are left out, as everywhere (:mod:`.metrics`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from reward_eval.analysis.metrics import Record, as_records, task_key, task_order
from reward_eval.analysis.progress import CONSTANT, FEW_PREFIXES, spearman
from vlm_reward.client.episode_record import EpisodeRecord
from vlm_reward.frames import evenly_spaced

# The episode-log key of the simulator's goal fraction of each frame sent (the share of the task's
# goal predicates that hold; a labelled set's run writes it, kept by every rescore as the episode's).
GOAL_FRACTION = "goal_fraction"
FEW_FRAMES = FEW_PREFIXES.replace("prefixes", "frames")
FRAME_VOC_REASONS = (FEW_FRAMES, CONSTANT)


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson correlation of ``x`` and ``y``; ``None`` for fewer than 2 pairs or a constant side."""
    if len(x) != len(y):
        raise ValueError(f"x and y must have equal length, got {len(x)} and {len(y)}.")
    if len(x) < 2:
        return None
    dx = np.asarray(x, dtype=np.float64) - np.mean(x)
    dy = np.asarray(y, dtype=np.float64) - np.mean(y)
    sxx, syy = float(dx @ dx), float(dy @ dy)
    if sxx == 0.0 or syy == 0.0:
        return None
    return float(dx @ dy) / math.sqrt(sxx * syy)


def aligned(goal_fraction: Sequence[float], scored: int) -> list[float]:
    """The goal fraction of each of the ``scored`` frames a judge scored of a video whose frames
    have ``goal_fraction``: those of the evenly spaced frames the server shows. ``ValueError`` when
    the judge scored more frames than the video has."""
    if not 1 <= scored <= len(goal_fraction):
        raise ValueError(
            f"{scored} frame scores cannot be frames of a video with {len(goal_fraction)} goal fractions."
        )
    return [float(goal_fraction[i]) for i in evenly_spaced(len(goal_fraction), scored)]


def frame_voc(frame_scores: Sequence[float]) -> tuple[float | None, str | None]:
    """``(VOC, None)`` of one episode's frame scores against their order, or ``(None, reason)``."""
    if len(frame_scores) < 2:
        return None, FEW_FRAMES
    value = spearman(list(range(len(frame_scores))), list(frame_scores))
    return (value, None) if value is not None else (None, CONSTANT)


def mean_frame_voc(successes: Sequence[Sequence[float]]) -> dict[str, Any]:
    """The per-frame VOC of native successes, one list of frame scores each: ``mean`` over those
    whose VOC is defined (``None`` if none is), ``n_voc``, ``n_episodes`` and ``undefined``
    (reason -> count, :func:`frame_voc`)."""
    vocs = [frame_voc(scores) for scores in successes]
    values = [v for v, _ in vocs if v is not None]
    return {
        "mean": float(np.mean(values)) if values else None,
        "n_voc": len(values),
        "n_episodes": len(vocs),
        "undefined": dict(sorted(Counter(why for v, why in vocs if v is None).items())),
    }


def ends_above_failures(success_ends: Sequence[float], failure_ends: Sequence[float]) -> dict[str, Any]:
    """``above`` (successes ending strictly above the failures' median end score), ``successes``,
    ``failure_median`` and ``share`` (``None`` without a success or a failure)."""
    median = float(np.median(failure_ends)) if len(failure_ends) else None
    above = 0 if median is None else sum(end > median for end in success_ends)
    share = above / len(success_ends) if success_ends and median is not None else None
    return {"above": above, "successes": len(success_ends), "failure_median": median, "share": share}


def _goal_fraction(record: EpisodeRecord) -> list[float] | None:
    values = record.extra.get(GOAL_FRACTION)
    if values is None:
        return None
    ok = isinstance(values, list) and all(isinstance(v, (int, float)) and 0 <= v <= 1 for v in values)
    if not ok or not values:
        raise ValueError(f"{GOAL_FRACTION} must be a non-empty list of numbers in [0, 1], got {values!r}.")
    return values


def _block(records: Sequence[EpisodeRecord]) -> dict[str, Any]:
    """The three measures over ``records`` (judged ones only, see the module docstring)."""
    judged = [r for r in records if not r.fallback]
    framed = [r for r in judged if r.frame_scores]
    scores, truth = [], []
    for r in framed:
        goal = _goal_fraction(r)
        if goal is not None:
            scores += r.frame_scores
            truth += aligned(goal, len(r.frame_scores))
    ends = {
        outcome: [r.vlm_score for r in judged if r.native_success is outcome] for outcome in (True, False)
    }
    return {
        "episodes": len(judged),
        "with_frame_scores": len(framed),
        "pearson_goal_fraction": pearson(scores, truth),
        "pearson_frames": len(scores),
        "frame_voc_successes": mean_frame_voc([r.frame_scores for r in framed if r.native_success]),
        "ends_above_failures": ends_above_failures(ends[True], ends[False]),
    }


def summarize_frame_progress(records: Sequence[Record]) -> dict[str, Any] | None:
    """The ``frame_progress`` block of ``summary.json``: :func:`_block`'s measures ``overall`` and
    ``per_task[str(task_id)]`` (with ``task_text``); ``None`` when no judged record has frame
    scores (a judge of the whole video: nothing frame by frame to measure)."""
    typed = as_records(records)
    if not any(r.frame_scores and not r.fallback for r in typed):
        return None
    by_task: dict[str, list[EpisodeRecord]] = {}
    for record in typed:
        by_task.setdefault(task_key(record.task_id), []).append(record)
    per_task = {}
    for key in sorted(by_task, key=task_order):
        text = next((str(r.task_text) for r in by_task[key] if r.task_text), "")
        per_task[key] = {"task_text": text, **_block(by_task[key])}
    return {"overall": _block(typed), "per_task": per_task}


def with_goal_fraction(record: Mapping[str, Any], goal_fraction: Sequence[float]) -> dict[str, Any]:
    """``record`` (a decoded line) with the goal fraction of each of its video's frames."""
    return {**record, GOAL_FRACTION: [float(g) for g in goal_fraction]}
