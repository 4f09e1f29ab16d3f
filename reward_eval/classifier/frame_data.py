"""The labelled set's frames as the classifier's tensors: which frames of an episode train it.

Every frame is labelled by the simulator's verdict on its own state, through the training target
(:mod:`vlm_reward.backends.classifier_targets`: ``success`` by default, the goal holds at that
step; ``half_goal``; ``goal_fraction``, graded); nothing is labelled by the episode. Of an
episode's served frames the last ``frames_per_episode`` train
(``None``: all of them): the end of an episode is where success and failure differ, the early
frames of every episode look alike. Every after-success frame trains too (the goal holding in
other arm poses). Frames go through :func:`vlm_reward.backends.resnet_checkpoint.model_input`,
the path the backend's frames take.

Counterfactuals never train the classifier: a ``wrong_task`` or ``shuffled`` success is made
of success frames, and the classifier sees neither the text nor the order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reward_eval.classifier.labelled_set import LabelledEpisode, LabelledFrames, LabelledSet
from vlm_reward.backends.classifier_targets import Target
from vlm_reward.backends.resnet_checkpoint import model_input


@dataclass
class FrameTensors:
    """Frames ready for the model: ``images`` float32 ``(N, 3, S, S)``, ``labels`` ``(N,)`` in
    [0, 1] (0/1 for a binary target, the target's levels for a graded one)."""

    images: Any
    labels: Any

    def level_counts(self) -> dict[float, int]:
        """Frames per label value, lowest first (a binary target: failures, then successes)."""
        values, counts = np.unique(self.labels.numpy(), return_counts=True)
        return {float(v): int(c) for v, c in zip(values, counts, strict=True)}

    def __len__(self) -> int:
        return len(self.labels)


def decode(labelled_set: LabelledSet, frames: LabelledFrames) -> np.ndarray:
    """The MP4's frames, uint8 ``(T, H, W, 3)``; ``ValueError`` if it holds another count than its labels."""
    from vlm_reward.video_io import decode_clip, probe_video

    path = labelled_set.path(frames)
    probe = probe_video(path)
    clip = decode_clip(path, range(probe.num_frames), probe)
    if len(clip.frames) != len(frames.steps):
        raise ValueError(f"{path} holds {len(clip.frames)} frames for {len(frames.steps)} labels.")
    return clip.frames


def frame_size(labelled_set: LabelledSet) -> int:
    """The smaller side of the set's frames (its first video's)."""
    first = decode(labelled_set, labelled_set.episodes[0].served)
    return int(min(first.shape[1:3]))


def training_picks(
    episode: LabelledEpisode, frames_per_episode: int | None
) -> list[tuple[LabelledFrames, list[int]]]:
    """Which frames of ``episode`` train: the last ``frames_per_episode`` served ones and every
    after-success one, as (video, frame indices)."""
    served = len(episode.served.steps)
    first = 0 if frames_per_episode is None else max(0, served - frames_per_episode)
    picks = [(episode.served, list(range(first, served)))]
    if episode.after is not None:
        picks.append((episode.after, list(range(len(episode.after.steps)))))
    return picks


def frame_labels(frames: LabelledFrames, target: Target) -> list[float]:
    """``target``'s label of every frame of ``frames``, from the simulator's verdict on it."""
    return [target.label(s, g) for s, g in zip(frames.success, frames.goal_fraction, strict=True)]


def training_tensors(
    labelled_set: LabelledSet,
    episodes: Sequence[LabelledEpisode],
    image_size: int,
    frames_per_episode: int | None,
    target: Target,
) -> FrameTensors:
    """The training frames of ``episodes`` (see the module docstring) with their ``target`` labels."""
    import torch

    images, labels = [], []
    for episode in episodes:
        for frames, indices in training_picks(episode, frames_per_episode):
            pixels = decode(labelled_set, frames)[indices]
            images.append(model_input(pixels, image_size))
            every = frame_labels(frames, target)
            labels += [every[i] for i in indices]
    return FrameTensors(torch.cat(images).contiguous(), torch.tensor(labels))


def served_frames(labelled_set: LabelledSet, episodes: Sequence[LabelledEpisode]) -> list[np.ndarray]:
    """Each episode's served video as decoded frames (what a judge is sent), in order."""
    return [decode(labelled_set, e.served) for e in episodes]
