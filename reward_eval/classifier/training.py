"""The classifier's training loop: RLinf's own loss on balanced mini-batches of labelled frames.

Each optimizer step feeds one mini-batch to ``ResNetRewardModel.forward(images, labels)`` and
steps on the binary cross-entropy it returns (RLinf's loss, unweighted). The classes are
balanced by the draw instead: an epoch is ``len(frames)`` frames drawn with replacement, half
from each class (:func:`balanced_draw`), so the few success frames are seen as often as the many
failures and a classifier that answers "failure" everywhere does not sit at a low loss. Each
frame is shifted by up to ``shift`` px (edge-padded random crop): from scratch, on a few thousand
frames of one camera, that is what keeps it from learning pixel positions.

Everything random is drawn from ``(seed, epoch)``. A progress bar (:mod:`reward_eval.progress_bar`)
counts the steps and shows the loss.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reward_eval.classifier.frame_data import FrameTensors
from reward_eval.progress_bar import progress_bar


@dataclass(frozen=True)
class Schedule:
    """How long and how fast: epochs, frames per step, AdamW's rate and decay, the shift, the seed."""

    epochs: int
    batch_size: int
    lr: float
    weight_decay: float
    shift: int
    seed: int


@dataclass
class TrainState:
    """Steps taken, the loss of every step and the mean of every epoch, and the seconds spent."""

    step: int = 0
    step_losses: list[float] = field(default_factory=list)
    epoch_losses: list[float] = field(default_factory=list)
    seconds: float = 0.0


def balanced_draw(labels: np.ndarray, seed: int, epoch: int) -> np.ndarray:
    """``len(labels)`` frame indices, each drawn from one class or the other with probability 1/2
    (uniformly within the class, with replacement); ``ValueError`` unless both classes occur."""
    positives, negatives = np.flatnonzero(labels > 0.5), np.flatnonzero(labels <= 0.5)
    if not len(positives) or not len(negatives):
        raise ValueError(
            f"training needs both classes, got {len(positives)} success and {len(negatives)} failure frames."
        )
    rng = np.random.default_rng([seed, epoch])
    pick_positive = rng.random(len(labels)) < 0.5
    return np.where(pick_positive, rng.choice(positives, len(labels)), rng.choice(negatives, len(labels)))


def shifted(images: Any, shift: int, rng: np.random.Generator) -> Any:
    """Each image translated by up to ``shift`` px in x and y (an edge-padded random crop)."""
    import torch
    import torch.nn.functional as F

    if shift <= 0:
        return images
    size = images.shape[-1]
    padded = F.pad(images, (shift, shift, shift, shift), mode="replicate")
    offsets = rng.integers(0, 2 * shift + 1, size=(len(images), 2))
    return torch.stack([padded[i, :, y : y + size, x : x + size] for i, (y, x) in enumerate(offsets)])


def train(model: Any, data: FrameTensors, schedule: Schedule, desc: str = "train classifier") -> TrainState:
    """Train ``model`` in place on ``data`` for ``schedule.epochs`` (see the module docstring)."""
    import torch

    optimizer = torch.optim.AdamW(model.parameters(), lr=schedule.lr, weight_decay=schedule.weight_decay)
    labels = data.labels.numpy()
    per_epoch = -(-len(labels) // schedule.batch_size)
    state, start = TrainState(), time.perf_counter()
    bar = progress_bar(schedule.epochs * per_epoch, desc, "step")
    try:
        for epoch in range(schedule.epochs):
            order = balanced_draw(labels, schedule.seed, epoch)
            rng = np.random.default_rng([schedule.seed, epoch, 1])
            losses = []
            model.train()
            for first in range(0, len(order), schedule.batch_size):
                batch = order[first : first + schedule.batch_size]
                images = shifted(data.images[batch], schedule.shift, rng)
                loss = model(images, data.labels[batch])["loss"]
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                losses.append(float(loss.detach()))
                state.step += 1
                state.step_losses.append(losses[-1])
                bar.set_postfix(epoch=epoch + 1, loss=f"{losses[-1]:.4f}", refresh=False)
                bar.update(1)
            state.epoch_losses.append(float(np.mean(losses)))
    finally:
        bar.close()
    state.seconds = round(time.perf_counter() - start, 1)
    model.eval()
    return state


def probabilities(model: Any, images: Any, batch_size: int = 256) -> list[float]:
    """P(success) of each image, in eval mode, without gradients."""
    import torch

    model.eval()
    out = []
    with torch.inference_mode():
        for first in range(0, len(images), batch_size):
            out += model(images[first : first + batch_size])["probabilities"].float().tolist()
    return out
