"""The episode log file: its name, its append-only writer, and its readers.

``<episode_log_dir>/vlm_episodes_<split>_rank<N>.jsonl``, one
:class:`~vlm_reward.client.episode_record.EpisodeRecord` a line.

Writing is append-only and line-atomic (:class:`EpisodeLogWriter`), so the envs of one worker
share a file and a crashed run keeps every episode it scored. Reading skips canary lines unless
asked for them (``canaries=True``), and a bad line (a truncated last line included) raises
``ValueError`` naming the file and the line number: better than silently evaluating fewer
episodes.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator

from vlm_reward.client.episode_record import EpisodeRecord

SPLITS = ("train", "eval")
EPISODE_LOG_GLOB = "vlm_episodes_*.jsonl"
TRAIN_LOG_GLOB = "vlm_episodes_train_*.jsonl"


def parse_line(line: str, where: str) -> EpisodeRecord:
    """One JSONL line as a record; ``ValueError`` starting with ``where`` for bad JSON or values."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc.msg}).") from exc
    return EpisodeRecord.from_json(data, where)


def iter_episode_log(path: str | os.PathLike[str], canaries: bool = False) -> Iterator[EpisodeRecord]:
    """The episodes of a JSONL episode log (``canaries=True``: its canary lines instead), blank
    lines skipped.

    A bad line (a truncated last line of a crashed run included: better to say so than to
    silently evaluate fewer episodes) raises ``ValueError`` naming the file and the 1-based
    line number.
    """
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                record = parse_line(line, f"{os.fspath(path)}, line {number}")
                if record.is_canary == canaries:
                    yield record


def read_episode_log(path: str | os.PathLike[str], canaries: bool = False) -> list[EpisodeRecord]:
    """Every episode of a JSONL episode log, or with ``canaries=True`` every canary line (see
    :func:`iter_episode_log`)."""
    return list(iter_episode_log(path, canaries))


def episode_log_path(log_dir: str, split: str, rank: int) -> str:
    """``<log_dir>/vlm_episodes_<split>_rank<rank>.jsonl``; ``rank`` is the env worker's rank.

    Every env of one worker (RLinf's pipeline stages) writes to its worker's file; the
    lines tell them apart by ``seed_offset``.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}.")
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise ValueError(f"rank must be an int >= 0, got {rank!r}.")
    return os.path.join(log_dir, f"vlm_episodes_{split}_rank{rank}.jsonl")


class EpisodeLogWriter:
    """Append-only JSONL file, one line per record; safe to share between threads.

    Each line goes out in one ``write`` on a file opened with ``O_APPEND``, so several
    writers on the same path (the envs of one worker) never interleave their lines, and a
    crashed run keeps every episode it scored.
    """

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, record: EpisodeRecord) -> None:
        """Append ``record`` as one line (``ValueError`` once closed)."""
        data = (json.dumps(record.to_json(), ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                raise ValueError(f"episode log {self.path} is closed.")
            view = memoryview(data)
            while view:  # a regular file takes it whole; the loop only guards a short write
                view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        """Close the file; closing twice is fine, writing after is ``ValueError``."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def write_episode_log(path: str | os.PathLike[str], records: Iterable[EpisodeRecord]) -> None:
    """Write ``records`` as a JSONL episode log (appending, as the env does)."""
    log = EpisodeLogWriter(os.fspath(path))
    try:
        for record in records:
            log.write(record)
    finally:
        log.close()
