"""The env's JSONL episode log: the file an env worker writes, and the ids of an ended episode.

One line per scored episode, :class:`vlm_reward.client.episode_record.EpisodeRecord`: the
line and its file (:mod:`vlm_reward.client.episode_log`) live beside the reward server's client,
so the tools that read logs or re-score their videos need no RLinf. The success signal and
the metrics are computed in :mod:`rlinf.envs.libero.episode_reward`.
"""

from __future__ import annotations

from collections.abc import Sequence

from vlm_reward.client.episode_log import EpisodeLogWriter, episode_log_path


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
