"""Per-episode bookkeeping of the VLM reward: the success signal, metrics and the JSONL log."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from rlinf.envs.libero.reward_model_config import RewardModelConfig
from rlinf.envs.libero.vlm_reward_client import ScoreResult

# Keys added to infos["episode"] (one value per env; RLinf averages them into env/...).
VLM_METRIC_KEYS = (
    "vlm_scored",  # 1 once the current episode has been scored
    "vlm_score",  # the score in [0, 1] (the fallback when the call failed)
    "vlm_success",  # score >= success_threshold
    "native_success",  # the simulator's success at any step of the episode
    "vlm_native_agree",  # vlm_success == native_success
    "vlm_fallback",  # 1 if the fallback score was used
    "vlm_latency_s",  # wall time of the scoring call, sampling and encoding included
)


def success_signal(score: float, cfg: RewardModelConfig) -> float:
    """The value fed into RLinf's reward shaping in place of the termination flag."""
    if cfg.binary_reward:
        return float(score >= cfg.success_threshold)
    return float(score)


def episode_metrics(result: ScoreResult, native_success: bool, cfg: RewardModelConfig) -> dict[str, float]:
    """Metric values of one scored episode, keyed like :data:`VLM_METRIC_KEYS`."""
    vlm_success = result.score >= cfg.success_threshold
    return {
        "vlm_scored": 1.0,
        "vlm_score": result.score,
        "vlm_success": float(vlm_success),
        "native_success": float(native_success),
        "vlm_native_agree": float(vlm_success == native_success),
        "vlm_fallback": float(result.fallback),
        "vlm_latency_s": result.latency_s,
    }


class EpisodeLog:
    """Append-only JSONL file, one line per scored episode; safe to share between threads.

    Lines are flushed as they are written, so a crashed run keeps every episode it scored.
    """

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the run

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, allow_nan=False)
        with self._lock:
            self._handle.write(line + "\n")
            self._handle.flush()

    def close(self) -> None:
        with self._lock:
            self._handle.close()


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
        "used_for_training": cfg.use_for_training,
        "binary_reward": cfg.binary_reward,
        "success_threshold": cfg.success_threshold,
    }
