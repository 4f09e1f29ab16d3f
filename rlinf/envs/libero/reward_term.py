"""The VLM term of one scored episode: the success signal, its metrics, the window's correction.

Pure arithmetic over a judgement and the reward settings, apart from LIBERO, HTTP, torch and
the per-env bookkeeping (:mod:`rlinf.envs.libero.episode_reward`, which applies it). The signal
``s`` replaces RLinf's termination flag in ``_calc_step_reward``: ``1[score >= threshold]``
(``binary_reward``) or the score itself.

The arithmetic, with ``term = reward_coef * s``: RLinf shaped every step of the window with
``s = 0`` for an episode whose score was not known yet, so the exact reward differs by
``term`` at the end step and, without ``use_rel_reward`` (``s`` is held), at each later
step of the window; with ``use_rel_reward`` the previous-step value RLinf keeps is raised by
``term`` so later steps difference against the held ``s``. The return trained on counts the
episode's steps up to and including its end step, the term once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from vlm_reward.client.episode_record import Judgement
from vlm_reward.verdict import is_success

# Keys added to infos["episode"] (one value per env; RLinf averages them into env/...), with what
# each means (the docs' table of env metrics is rendered from this).
VLM_METRICS: dict[str, str] = {
    "vlm_scored": "1 once the episode has been scored",
    "vlm_score": "the score in [0, 1] (the fallback when the call failed)",
    "vlm_success": "`vlm_score >= success_threshold`",
    "native_success": "the simulator reported success at some step of the episode",
    "vlm_native_agree": "`vlm_success == native_success`",
    "vlm_fallback": "1 if the fallback score was used",
    "vlm_latency_s": "wall time of the call, frame sampling and MP4 encoding included",
    "vlm_failovers": "reward-server replicas that failed before one answered (0 with one endpoint)",
}
VLM_METRIC_KEYS = tuple(VLM_METRICS)
# Keys of the env worker as a whole (the same value in every env, so RLinf's mean keeps it).
JUDGE_SECONDS = "vlm_judge_seconds"
WORKER_METRICS: dict[str, str] = {
    JUDGE_SECONDS: "seconds the env worker has spent on the judge since it was built: rendering the "
    "frames it sends (`simulation.cameras: False`) and waiting for scores at the end of a chunk",
}


class SignalSettings(Protocol):
    """The settings the core reads (``RewardModelConfig`` is one)."""

    binary_reward: bool
    success_threshold: float
    use_for_training: bool


@dataclass(frozen=True)
class Shaping:
    """RLinf's reward settings that the correction depends on (the step penalty does not)."""

    reward_coef: float
    use_rel_reward: bool


def success_signal(score: float, cfg: SignalSettings) -> float:
    """The value fed into RLinf's reward shaping in place of the termination flag."""
    if cfg.binary_reward:
        return float(is_success(score, cfg.success_threshold))
    return float(score)


def episode_metrics(result: Judgement, native_success: bool, cfg: SignalSettings) -> dict[str, float]:
    """Metric values of one scored episode, keyed like :data:`VLM_METRIC_KEYS`."""
    vlm_success = is_success(result.score, cfg.success_threshold)
    return {
        "vlm_scored": 1.0,
        "vlm_score": float(result.score),
        "vlm_success": float(vlm_success),
        "native_success": float(native_success),
        "vlm_native_agree": float(vlm_success == native_success),
        "vlm_fallback": float(result.fallback),
        "vlm_latency_s": float(result.latency_s),
        "vlm_failovers": float(result.failovers),
    }


def end_step_correction(signal: float, position: int, width: int, shaping: Shaping) -> np.ndarray:
    """What to add to one env's rewards of a ``width``-step window whose episode ended at ``position``.

    The window was shaped with ``s = 0``; the exact rewards differ by ``reward_coef * s`` at
    the end step, and without ``use_rel_reward`` also at each later step (``s`` is held).
    """
    if not 0 <= position < width:
        raise ValueError(f"position must be in [0, {width}) for a {width}-step window, got {position}.")
    row = np.zeros(width)
    term = shaping.reward_coef * signal
    if shaping.use_rel_reward:
        row[position] = term
    else:
        row[position:] = term
    return row
