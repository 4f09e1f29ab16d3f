"""The JSONL episode logs of a run: which files, and their records.

The env writes ``vlm_episodes_<split>_rank<N>.jsonl`` into its ``episode_log_dir`` (the run
dir of an evaluation, the log dir of a training run), one
:class:`vlm_reward.client.episode_record.EpisodeRecord` per line. These are the only readers
of those files; the analysis modules work on the records they return.
"""

from __future__ import annotations

import os
from pathlib import Path

from vlm_reward.client.episode_record import EPISODE_LOG_GLOB, TRAIN_LOG_GLOB, EpisodeRecord, read_episode_log

__all__ = ["episode_logs", "load_episodes", "load_train_episodes"]


def episode_logs(run_dir: Path) -> list[Path]:
    """The episode logs directly in ``run_dir`` (one per env rank), sorted."""
    return sorted(Path(run_dir).glob(EPISODE_LOG_GLOB))


def load_episodes(path: str | os.PathLike[str]) -> list[EpisodeRecord]:
    """Read a JSONL episode log, blank lines skipped.

    Raises ``ValueError`` naming the file and the 1-based line number of a line that is not
    a valid record (a truncated last line of a crashed run included: better to say so than
    to silently evaluate fewer episodes).
    """
    return read_episode_log(path)


def load_train_episodes(log_dir: Path) -> list[EpisodeRecord]:
    """Every record of the train-split episode logs anywhere below a training run's ``log_dir``."""
    return [record for path in sorted(Path(log_dir).rglob(TRAIN_LOG_GLOB)) for record in load_episodes(path)]
