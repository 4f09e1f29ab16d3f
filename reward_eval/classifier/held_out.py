"""The training command's before/after numbers: a classifier on the measured episodes, in process.

The measured episodes are a split never trained on (``held_out``, and ``test`` apart). Each one is
judged as the ``resnet`` backend judges the video the env's client would send (its served frames:
the aggregate over the last ``last_k`` of them, :mod:`vlm_reward.backends.resnet_checkpoint`), and
each of its successes also as the audit's counterfactuals of it (:mod:`vlm_reward.perturbations`,
seeded per episode as the audit seeds them), labelled failures. The judged examples have the fine-tune's shape
(:func:`reward_eval.finetune.metrics.judge_block`: AUROC, Brier, best F1, the audit's positive rate
per row), so the report, ``finetune.json`` and the terminal table are the fine-tune's.

In process, on the decoded frames (a counterfactual is not re-encoded): the same frames the server
would decode from the served MP4, without starting one; ``reward-eval rescore --backend resnet``
and ``audit`` measure the served path itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from reward_eval.analysis.hard_negatives import SuiteTask, hard_negative
from reward_eval.classifier.labelled_set import LabelledEpisode
from reward_eval.classifier.training import probabilities
from vlm_reward.backends.resnet_checkpoint import ClassifierConfig, episode_score, model_input, scored_frames
from vlm_reward.frames import evenly_spaced
from vlm_reward.perturbations import Source, perturb
from vlm_reward.protocol import DEFAULT_NFRAMES


def examples(
    episodes: Sequence[LabelledEpisode], frames: Sequence[np.ndarray], perturbations: Sequence[str], seed: int
) -> list[tuple[dict[str, Any], np.ndarray]]:
    """(example fields, frames) of every episode and every counterfactual of its successes."""
    tasks = {e.task_id: SuiteTask(e.task_id, "", e.task_text) for e in episodes}
    out = []
    for i, (episode, video) in enumerate(zip(episodes, frames, strict=True)):
        base = {
            "episode": i,
            "task_id": episode.task_id,
            "task_text": episode.task_text,
            "video": episode.served.video,
        }
        own = "original" if episode.native_success else "failure"
        out.append(({**base, "source": own, "label": episode.native_success}, video))
        if not episode.native_success:
            continue
        source = Source(video, episode.task_text, hard_negative(episode.task_id, tasks), (seed, i))
        for name in perturbations:
            made = perturb(name, source)
            if made is not None:
                out.append(
                    ({**base, "source": name, "label": False, "task_text": made.task_text}, made.frames)
                )
    return out


def shown(frames: np.ndarray, config: ClassifierConfig, nframes: int = DEFAULT_NFRAMES) -> np.ndarray:
    """The frames the backend scores of a video: the last ``last_k`` of its ``nframes`` shown."""
    indices = evenly_spaced(len(frames), nframes)
    return frames[[indices[i] for i in scored_frames(len(indices), config)]]


def frame_scores(model: Any, config: ClassifierConfig, videos: Sequence[np.ndarray]) -> list[float]:
    """The classifier's score of every frame of ``videos``, in order (one batched pass)."""
    import torch

    return probabilities(model, torch.cat([model_input(v, config.image_size) for v in videos]))


def judge(
    model: Any, config: ClassifierConfig, cases: Sequence[tuple[dict[str, Any], np.ndarray]]
) -> list[dict[str, Any]]:
    """Every case's fields with the classifier's ``score`` (one batched pass over all frames)."""
    import torch

    picked = [shown(frames, config) for _, frames in cases]
    scores = probabilities(model, torch.cat([model_input(p, config.image_size) for p in picked]))
    judged, start = [], 0
    for (fields, _), frames in zip(cases, picked, strict=True):
        judged.append(
            {**fields, "score": episode_score(scores[start : start + len(frames)], config), "error": None}
        )
        start += len(frames)
    return judged
