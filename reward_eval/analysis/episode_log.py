"""The JSONL episode logs of a run: which files, their records, and the episodes with kept videos.

The env writes ``vlm_episodes_<split>_rank<N>.jsonl`` into its ``episode_log_dir`` (the run
dir of an evaluation, the log dir of a training run), one
:class:`vlm_reward.client.episode_record.EpisodeRecord` per line, read back with
:func:`vlm_reward.client.episode_log.read_episode_log`. The commands that judge a run's
videos again (``rescore``, ``rescore --prefixes``, the audit) work on :class:`KeptEpisode`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from vlm_reward.client.episode_log import EPISODE_LOG_GLOB, TRAIN_LOG_GLOB, read_episode_log
from vlm_reward.client.episode_record import EpisodeRecord


@dataclass(frozen=True)
class KeptEpisode:
    """A scored episode whose video was kept: its log's file name, its line index (0-based),
    the record, and the video's path."""

    log: str
    index: int
    record: EpisodeRecord
    video: str


def episode_logs(run_dir: Path) -> list[Path]:
    """The episode logs directly in ``run_dir`` (one per env rank), sorted."""
    return sorted(Path(run_dir).glob(EPISODE_LOG_GLOB))


def kept_episodes(logs: list[Path]) -> list[KeptEpisode]:
    """The episodes of ``logs`` whose ``video_path`` names a file that still exists, in log order."""
    return [
        KeptEpisode(log.name, i, record, str(record.video_path))
        for log in logs
        for i, record in enumerate(read_episode_log(log))
        if record.video_path and os.path.isfile(record.video_path)
    ]


def load_train_episodes(log_dir: Path) -> list[EpisodeRecord]:
    """Every record of the train-split episode logs anywhere below a training run's ``log_dir``."""
    return [
        record for path in sorted(Path(log_dir).rglob(TRAIN_LOG_GLOB)) for record in read_episode_log(path)
    ]
