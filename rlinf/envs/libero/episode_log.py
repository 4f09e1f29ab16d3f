"""The env's JSONL episode log: the file an env worker writes, and the line of each ended episode.

One line per scored episode or canary, :class:`vlm_reward.client.episode_record.EpisodeRecord`:
the line and its file (:mod:`vlm_reward.client.episode_log`) live beside the reward server's
client, so the tools that read logs or re-score their videos need no RLinf. What is RLinf's is
here: the worker's rank that names the file, and where an ended episode ran, read off RLinf's
``LiberoEnv`` arrays before the env resets. The success signal and the metrics are computed in
:mod:`rlinf.envs.libero.episode_reward`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlinf.envs.libero.episode_reward import Scored
from vlm_reward.client.episode_log import EpisodeLogWriter, episode_log_path
from vlm_reward.client.episode_record import EpisodeRecord, JudgementSettings
from vlm_reward.watch.judge_watch import ScoredCanary


def split_name(is_eval: bool) -> str:
    """The log's split: ``eval`` for an evaluation env, ``train`` otherwise."""
    return "eval" if is_eval else "train"


def open_episode_log(log_dir: str | None, split: str, rank: int) -> EpisodeLogWriter | None:
    """The worker's ``vlm_episodes_<split>_rank<rank>.jsonl`` in ``log_dir``; ``None`` without a dir."""
    if log_dir is None:
        return None
    return EpisodeLogWriter(episode_log_path(log_dir, split, rank))


def reset_state_id(task_id: int, trial_id: int, trial_id_bins_cumsum: Sequence[int]) -> int:
    """The reset-state id of RLinf's ``(task_id, trial_id)``: the task's first state plus the trial.

    ``trial_id_bins_cumsum`` is RLinf's ``LiberoEnv.cumsum_trial_id_bins`` (states per task,
    summed), so task ``t`` starts at entry ``t - 1`` and task 0 at 0.
    """
    first_state_of_task = int(trial_id_bins_cumsum[task_id - 1]) if task_id > 0 else 0
    return first_state_of_task + int(trial_id)


def episode_line(env: Any, rank: int, scored: Scored, settings: JudgementSettings) -> EpisodeRecord:
    """The log line of a collected episode: where it ran, its counter and length, the judgement."""
    meta = episode_meta(env, scored.env, rank, episode=scored.episode, episode_length=scored.length)
    return EpisodeRecord.judged(meta, scored.result, scored.native_success, settings, scored.trained_on_judge)


def canary_line(env: Any, rank: int, scored: ScoredCanary, settings: JudgementSettings) -> EpisodeRecord:
    """The log line of a collected canary: a native failure by construction, never trained on."""
    canary = scored.canary
    meta = {**episode_meta(env, canary.env, rank), "canary": canary.perturbation}
    return EpisodeRecord.judged(meta, scored.result, False, settings, used_for_training=False)


def episode_meta(env: Any, index: int, rank: int, **episode: int) -> dict[str, Any]:
    """Where env ``index``'s ended episode ran, read off RLinf's ``LiberoEnv`` ``env`` (its
    ``task_ids``, ``trial_ids``, ``task_descriptions``, ``seed_offset``, ``is_eval`` and
    ``cumsum_trial_id_bins``) and the worker's ``rank``. Call it before any reset, so the ids are
    still the ended episode's. ``episode`` adds its counter and length (``None`` keys are not written).
    """
    task_id, trial_id = int(env.task_ids[index]), int(env.trial_ids[index])
    return {
        "split": split_name(env.is_eval),
        "rank": rank,
        "seed_offset": int(env.seed_offset),
        "env": index,
        "task_id": task_id,
        "task_text": env.task_descriptions[index],
        "trial_id": trial_id,
        "reset_state_id": reset_state_id(task_id, trial_id, env.cumsum_trial_id_bins),
        **episode,
    }


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
