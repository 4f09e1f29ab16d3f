"""Each episode's outcome, per env and GRPO step: the record the comparison's group-aware statistics read.

RLinf's runner logs every ``infos["episode"]`` key as its mean over a step's episodes, which loses
the GRPO group each episode was in; the statistics treat a group's episodes (one initial state) as
one draw, so they need the outcomes one by one. The env worker of a ``--cpu-learn`` run
(:mod:`.env_worker`) writes :func:`outcomes_file` into ``cpu_smoke.record_dir`` after each
rollout: ``{"step": N, "rank": R, "group_size": G, <key>: [one value per episode]}`` for each key of
:data:`OUTCOME_KEYS` the env reported, in env order, which is the order of the actor's
trajectories (consecutive ``group_size`` envs are a group). Recorded, never fed back to training.
Pure: JSON and lists.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# success_once: the simulator's success at any step (RLinf's env/success_once); success_at_end: at the
# last step (RLinf records it only with ignore_terminations); the rest are the env's VLM keys.
OUTCOME_KEYS = (
    "success_once",
    "success_at_end",
    "episode_len",
    "vlm_score",
    "vlm_success",
    "native_success",
    "vlm_fallback",
)
Episode = dict[str, Any]  # {"success": bool, "judged": bool | None, "fallback": bool, "length": int}


def outcomes_file(step: int, rank: int | str) -> str:
    """The record's file name for GRPO step ``step`` (from 1) of env worker ``rank`` (``"*"``: a glob)."""
    return f"outcomes_step{step}_rank{rank}.json"


def outcome_record(step: int, rank: int, group_size: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The record of one rollout from the env worker's per-episode metrics (tensors or lists)."""
    record: dict[str, Any] = {"step": step, "rank": rank, "group_size": group_size}
    for key in OUTCOME_KEYS:
        if key in metrics:
            values = metrics[key]
            values = values.tolist() if hasattr(values, "tolist") else list(values)
            record[key] = [float(value) for value in values]
    return record


def episodes(record: Mapping[str, Any]) -> list[Episode]:
    """A record's episodes in env order: the simulator's success (at any step), the judge's
    verdict (None without a judge), whether the judge's score was a fallback, the length."""
    success = record["success_once"]
    judged = record.get("vlm_success")
    fallback = record.get("vlm_fallback") or [0.0] * len(success)
    lengths = record.get("episode_len") or [0.0] * len(success)
    return [
        {
            "success": bool(success[i]),
            "judged": None if judged is None else bool(judged[i]),
            "fallback": bool(fallback[i]),
            "length": int(lengths[i]),
        }
        for i in range(len(success))
    ]


def read_groups(record_dir: Path) -> list[list[list[Episode]]]:
    """``steps[k][g]``: the episodes of GRPO group ``g`` at step ``k + 1``, every env worker's in
    rank order; ValueError when a step's episodes do not split into its groups."""
    steps = []
    for step in itertools.count(1):
        paths = list(record_dir.glob(outcomes_file(step, "*")))
        if not paths:
            return steps
        records = sorted((json.loads(path.read_text()) for path in paths), key=lambda r: r["rank"])
        row = [episode for record in records for episode in episodes(record)]
        size = int(records[0]["group_size"])
        if size < 1 or len(row) % size:
            raise ValueError(f"step {step}'s {len(row)} episodes do not split into groups of {size}.")
        steps.append([row[g : g + size] for g in range(0, len(row), size)])
    return steps
