"""The JSONL episode logs: one JSON object per scored episode, as the env writes them.

The env (:func:`rlinf.envs.libero.episode_scoring.episode_record`) writes
``vlm_episodes_<split>_rank<N>.jsonl`` into its ``episode_log_dir``: the run dir of an
evaluation, the log dir of a training run. These are the only readers of those files; the
analysis modules work on the records they return.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

EPISODE_LOG_GLOB = "vlm_episodes_*.jsonl"
TRAIN_LOG_GLOB = "vlm_episodes_train_*.jsonl"


def episode_logs(run_dir: Path) -> list[Path]:
    """The episode logs directly in ``run_dir`` (one per env rank), sorted."""
    return sorted(Path(run_dir).glob(EPISODE_LOG_GLOB))


def load_episodes(path: str | os.PathLike[str]) -> list[dict]:
    """Read a JSONL episode log: one JSON object per line, blank lines skipped.

    Raises ``ValueError`` naming the file and the 1-based line number of a line that is not
    a JSON object (a truncated last line of a crashed run included: better to say so than to
    silently evaluate fewer episodes).
    """
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}, line {number}: not valid JSON ({exc.msg}).") from exc
            if not isinstance(record, dict):
                raise ValueError(
                    f"{path}, line {number}: expected a JSON object, got {type(record).__name__}."
                )
            records.append(record)
    return records


def load_train_episodes(log_dir: Path) -> list[dict]:
    """Every record of the train-split episode logs anywhere below a training run's ``log_dir``."""
    return [record for path in sorted(Path(log_dir).rglob(TRAIN_LOG_GLOB)) for record in load_episodes(path)]
