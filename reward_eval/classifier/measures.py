"""What ``train-classifier`` measures beyond the fine-tune's table: frames, targets, variants.

Pure functions over judged numbers, for the summary (``finetune.json``), the report and the
terminal:

- :func:`frame_block`: every served frame of the measured episodes (the frames the env's client
  sends a judge; the reset frame to the end step), its score against the simulator's progress:
  the Pearson correlation with ``goal_fraction`` and with the training target's label, the
  mean score at each ``goal_fraction`` level, and the per-frame VOC of the native successes (does
  the score rise through a successful episode). What a progress judge is measured by; a success
  classifier's correlation is lower by design (it should score one placed object of two as 0);
- :func:`variant_block`: per policy variant of the set (``expert``, ``misplace``, the drops, ...),
  its episodes, native successes and judged successes at the threshold: which kind of failure a
  judge lets through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from reward_eval.analysis.frame_progress import mean_frame_voc, pearson
from vlm_reward.verdict import is_success


def frame_block(
    scores: Sequence[float],
    goal_fractions: Sequence[float],
    labels: Sequence[float],
    episodes: Sequence[tuple[int, bool]] = (),
) -> dict[str, Any]:
    """The frame measures (see the module docstring): ``frames``, ``pearson_goal_fraction``,
    ``pearson_target``, ``mean_score_by_goal_fraction`` (``{"0": m, "0.5": m, "1": m}``) and
    ``frame_voc_successes`` (:func:`~reward_eval.analysis.frame_progress.mean_frame_voc`).
    ``episodes``: each episode's ``(frames, native_success)``, in the order its frames have in
    ``scores``; their frames must add up to the scores'."""
    if sum(n for n, _ in episodes) not in (0, len(scores)):
        raise ValueError(f"episodes hold {sum(n for n, _ in episodes)} frames, the scores {len(scores)}.")
    fractions = np.asarray(goal_fractions, dtype=np.float64)
    values = np.asarray(scores, dtype=np.float64)
    by_level = {f"{level:g}": float(values[fractions == level].mean()) for level in np.unique(fractions)}
    starts = np.cumsum([0, *(n for n, _ in episodes)])[:-1]
    successes = [list(scores[a : a + n]) for a, (n, ok) in zip(starts, episodes, strict=True) if ok]
    return {
        "frames": len(values),
        "pearson_goal_fraction": pearson(scores, goal_fractions),
        "pearson_target": pearson(scores, labels),
        "mean_score_by_goal_fraction": by_level,
        "frame_voc_successes": mean_frame_voc(successes),
    }


def variant_block(
    judged: Sequence[Mapping[str, Any]], variants: Mapping[str, str], threshold: float
) -> dict[str, dict[str, int]]:
    """Per variant (``variants``: video -> variant name), over the judged episodes of ``judged``
    (``source`` ``original`` or ``failure``): ``episodes``, ``native_successes`` and
    ``judged_successes`` (score >= ``threshold``), split by native outcome: ``judged_of_successes``,
    ``judged_of_failures``. Variants in first-seen order."""
    out: dict[str, dict[str, int]] = {}
    for case in judged:
        if case["source"] not in ("original", "failure") or case["score"] is None:
            continue
        row = out.setdefault(
            variants[case["video"]],
            {"episodes": 0, "native_successes": 0, "judged_of_successes": 0, "judged_of_failures": 0},
        )
        yes = is_success(case["score"], threshold)
        row["episodes"] += 1
        row["native_successes"] += int(case["label"])
        row["judged_of_successes" if case["label"] else "judged_of_failures"] += int(yes)
    return out


def variant_lines(block: Mapping[str, Mapping[str, int]]) -> list[str]:
    """One line per variant: its native successes and failures, and how many of each were judged
    a success."""
    lines = []
    for name, row in block.items():
        failures = row["episodes"] - row["native_successes"]
        lines.append(
            f"{name}: {row['judged_of_successes']}/{row['native_successes']} successes and "
            f"{row['judged_of_failures']}/{failures} failures judged a success"
        )
    return lines
