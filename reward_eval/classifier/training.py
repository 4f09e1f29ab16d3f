"""The classifier's training loop: RLinf's own loss on balanced mini-batches of labelled frames.

Each optimizer step feeds one mini-batch to ``ResNetRewardModel.forward(images, labels)`` and
steps on the binary cross-entropy it returns (RLinf's loss, unweighted; it takes soft targets,
so a graded target such as ``goal_fraction`` trains through it unchanged). The label values are
balanced by the draw instead: an epoch is ``len(frames)`` frames drawn with replacement, an
equal share from each label value (:func:`balanced_draw`: for a 0/1 target half from each class,
for ``goal_fraction``'s 0, 0.5 and 1 a third from each), so the few success frames are seen as
often as the many failures and a classifier that answers "failure" everywhere does not sit at a
low loss. Each frame is shifted by up to ``shift`` px (edge-padded random crop): from scratch, on
a few thousand frames of one camera, that is what keeps it from learning pixel positions.

**The class-prior floor** (:func:`prior_floor`) is the loss of the best constant answer under that
draw: the mean label over the levels, whose binary cross-entropy is its entropy (``ln 2`` for a
0/1 target and for ``goal_fraction``'s 0, 0.5, 1 alike). A soft target also has a floor no model
goes below (a frame labelled 0.5 costs ``ln 2`` even when predicted exactly), so for a graded
target the trained loss ends between the two (:func:`irreducible_loss`), never near 0.

**Whether it left the prior** is judged on :func:`fitted_loss`, the trained model's loss in eval
mode over every training frame, as the server will run it, not on the last epoch's training-mode
loss: with few steps, batch norm's running statistics lag the weights, and a run whose training
loss dipped could still answer the same for every frame when served.

Everything random is drawn from ``(seed, epoch)``. A progress bar (:mod:`reward_eval.progress_bar`)
counts the steps and shows the loss.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reward_eval.classifier.frame_data import FrameTensors
from reward_eval.finetune.readout import binary_entropy
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
    """``len(labels)`` frame indices, each from one of the label values with equal probability
    (uniformly within the value's frames, with replacement); ``ValueError`` unless two values
    occur. For 0/1 labels this is the draw of a class with probability 1/2, as it always was (the
    same random stream: the value is picked, then the highest value's frames drawn first)."""
    levels = np.unique(labels)[::-1]
    if len(levels) < 2:
        raise ValueError(f"training needs two label values or more, got only {levels.tolist()}.")
    rng = np.random.default_rng([seed, epoch])
    level = (rng.random(len(labels)) * len(levels)).astype(int)
    picks = np.stack([rng.choice(np.flatnonzero(labels == value), len(labels)) for value in levels])
    return picks[level, np.arange(len(labels))]


def prior_floor(labels: np.ndarray) -> float:
    """The loss of the best constant answer under :func:`balanced_draw` (see the module
    docstring): the entropy of the mean over the label values, in nats."""
    return binary_entropy(float(np.unique(labels).mean()))


def irreducible_loss(labels: np.ndarray) -> float:
    """The loss no model goes below under :func:`balanced_draw`: the mean over the label values of
    each value's own entropy (0 for a 0/1 target; ``ln 2 / 3`` for ``goal_fraction``'s 0, 0.5, 1,
    since a frame labelled 0.5 costs ``ln 2`` even when predicted exactly)."""
    return float(np.mean([binary_entropy(float(v)) for v in np.unique(labels)]))


def fitted_loss(labels: np.ndarray, probabilities: np.ndarray) -> float:
    """The binary cross-entropy of ``probabilities`` against ``labels`` weighted as
    :func:`balanced_draw` weights the values (the mean over the values of each value's mean loss):
    the loss the training draw estimates, measured once on every frame in eval mode, as served."""
    p = np.clip(np.asarray(probabilities, dtype=np.float64), 1e-7, 1 - 1e-7)
    y = np.asarray(labels, dtype=np.float64)
    loss = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    return float(np.mean([loss[y == v].mean() for v in np.unique(y)]))


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


def rlinf_loss(model: Any, images: Any, labels: Any) -> Any:
    """RLinf's own loss: the binary cross-entropy ``ResNetRewardModel.forward(images, labels)`` returns."""
    return model(images, labels)["loss"]


def train(
    model: Any,
    data: FrameTensors,
    schedule: Schedule,
    desc: str = "train classifier",
    loss_fn: Callable[[Any, Any, Any], Any] = rlinf_loss,
) -> TrainState:
    """Train ``model`` in place on ``data`` for ``schedule.epochs`` (see the module docstring).
    ``loss_fn(model, images, labels)``: RLinf's loss; a benchmark measures another through it."""
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
                loss = loss_fn(model, images, data.labels[batch])
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
    """P(success) of each image, in eval mode, without gradients, on the model's device."""
    import torch

    model.eval()
    device = next(model.parameters()).device
    out = []
    with torch.inference_mode():
        for first in range(0, len(images), batch_size):
            batch = images[first : first + batch_size].to(device)
            out += model(batch)["probabilities"].float().cpu().tolist()
    return out
