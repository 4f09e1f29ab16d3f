"""The VLM reward's JSONL episode log: where it goes, what one line holds, how lines are written.

The success signal and the metrics are computed in :mod:`rlinf.envs.libero.episode_reward`.
"""

from __future__ import annotations

import json
import os
import threading
from typing import TYPE_CHECKING, Any

from rlinf.envs.libero.reward_model_config import RewardModelConfig

if TYPE_CHECKING:
    from rlinf.envs.libero.vlm_reward_client import ScoreResult

SPLITS = ("train", "eval")


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


def worker_rank(worker_info: Any) -> int:
    """The env worker's rank, RLinf's ``WorkerInfo.rank``; 0 for an env built outside a worker.

    (RLinf's ``seed_offset`` is ``rank * stage_num + stage``: not the rank once a worker
    runs several pipeline stages.)
    """
    if worker_info is None:
        return 0
    rank = getattr(worker_info, "rank", None)
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise ValueError(f"worker_info.rank must be an int >= 0, got {rank!r}.")
    return rank


class EpisodeLog:
    """Append-only JSONL file, one line per scored episode; safe to share between threads.

    Each line goes out in one ``write`` on a file opened with ``O_APPEND``, so several logs
    on the same path (the envs of one worker) never interleave their lines, and a crashed
    run keeps every episode it scored.
    """

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, record: dict[str, Any]) -> None:
        data = (json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                raise ValueError(f"episode log {self.path} is closed.")
            view = memoryview(data)
            while view:  # a regular file takes it whole; the loop only guards a short write
                view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def episode_record(result: ScoreResult, native_success: bool, cfg: RewardModelConfig, **meta: Any) -> dict:
    """The JSONL line for one episode: ``meta`` (task, ids, length) plus the judgement."""
    return {
        **meta,
        "native_success": bool(native_success),
        "vlm_score": result.score,
        "vlm_success": bool(result.score >= cfg.success_threshold),
        "vlm_raw_value": result.raw_value,
        "vlm_answer": result.answer,
        "fallback": result.fallback,
        "error": result.error,
        "error_kind": result.error_kind,
        "latency_s": round(result.latency_s, 4),
        "frames_sent": result.num_frames_sent,
        "video_path": result.video_path,
        "endpoint": result.endpoint,
        "failovers": result.failovers,
        "used_for_training": cfg.use_for_training,
        "binary_reward": cfg.binary_reward,
        "success_threshold": cfg.success_threshold,
    }
