"""The training loop: the judge's readout loss over the examples, epoch by epoch, resumable.

One example per forward pass (videos differ in length; the model sees each exactly as the
server would, :mod:`.inputs`), ``grad_accum`` examples per optimizer step (AdamW, gradients
clipped at ``max_grad_norm``), the examples in a fresh order each epoch drawn from
``(seed, epoch)`` alone, so a resumed run visits them exactly as an uninterrupted one would
(an epoch's steps even in size, :func:`steps_of`).
After every epoch the trained weights, the optimizer and the loss curve go to
``checkpoints/epoch-<n>.pt`` (:func:`save_checkpoint`, which then deletes the previous epoch's:
a full fine-tune's optimizer state is twice the model); ``--resume`` loads it and continues
with the next epoch. A progress bar (:mod:`reward_eval.progress_bar`) counts the optimizer steps
and shows the loss.

The loss of one step is the class-weighted readout cross-entropy (:mod:`.readout`) averaged over
its examples; the epoch's loss is the mean over its steps.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from reward_eval.finetune.lora import load_trainable_state, trainable_state
from reward_eval.finetune.readout import answer_log_shares, expected_scores, weighted_nll
from reward_eval.finetune.settings import LR_SCHEDULES
from reward_eval.progress_bar import progress_bar

CHECKPOINT_GLOB = "epoch-*.pt"


@dataclass(frozen=True)
class Item:
    """One training example as the loop needs it: a cache key, a way to get its inputs, the
    target answer's index and the example's class weight."""

    key: str
    inputs: Callable[[], Any]
    target: int
    weight: float


@dataclass(frozen=True)
class Schedule:
    """How long and how fast: epochs, examples per optimizer step, learning rate (and how it moves,
    :func:`step_lr`), clipping, seed."""

    epochs: int
    grad_accum: int
    lr: float
    max_grad_norm: float
    seed: int
    lr_schedule: str = "constant"


def step_lr(lr: float, schedule: str, step: int, total: int) -> float:
    """The learning rate of optimizer step ``step`` (0-based) of ``total``: ``lr`` throughout
    (``constant``), or from ``lr`` down to 0 along half a cosine (``cosine``: the late steps of a
    long fine-tune move the weights less, where a constant rate kept the loss bouncing between
    epochs). A function of the step alone, so a resumed run continues on the same curve.
    ``ValueError`` naming the choices for an unknown schedule."""
    if schedule not in LR_SCHEDULES:
        raise ValueError(f"unknown learning-rate schedule {schedule!r}; valid: {', '.join(LR_SCHEDULES)}.")
    if schedule == "constant" or total <= 0:
        return lr
    return lr * 0.5 * (1.0 + math.cos(math.pi * min(step, total) / total))


@dataclass
class TrainState:
    """Where training stands: epochs done, optimizer steps taken, the loss of every step and epoch."""

    epoch: int = 0
    step: int = 0
    step_losses: list[float] = field(default_factory=list)
    epoch_losses: list[float] = field(default_factory=list)


def epoch_order(n: int, seed: int, epoch: int) -> list[int]:
    """The order of ``n`` examples in ``epoch``: a permutation drawn from ``(seed, epoch)`` only."""
    return np.random.default_rng([seed, epoch]).permutation(n).tolist()


def steps_of(order: Sequence[int], grad_accum: int) -> list[list[int]]:
    """``order`` cut into ``ceil(len(order) / grad_accum)`` optimizer steps of at most ``grad_accum``
    examples whose sizes differ by at most one (the larger first): 9 examples at 8 a step are steps
    of 5 and 4, not of 8 and 1, whose one example would move the weights as far as eight (AdamW's
    step does not shrink with the batch; on issue 55's four episodes, each as sent and re-encoded,
    that kept the tiny judge at the class prior).
    ``ValueError`` for ``grad_accum`` below 1."""
    if grad_accum < 1:
        raise ValueError(f"grad_accum must be at least 1, got {grad_accum}.")
    count = -(-len(order) // grad_accum)
    if count == 0:
        return []
    size, larger = divmod(len(order), count)
    ends = [i * size + min(i, larger) for i in range(count + 1)]
    return [list(order[a:b]) for a, b in itertools.pairwise(ends)]


def last_logits(model: Any, inputs: Any) -> Any:
    """The next-token logits after the prompt (batch of one: the last position)."""
    return model(**inputs).logits[:, -1, :]


def read_scores(model: Any, items: Sequence[Item], tokens: Any) -> list[float]:
    """Each item's score as the server reads it (P(yes) for yes/no), without gradients."""
    import torch

    scores = []
    model.eval()
    with torch.no_grad():
        for item in items:
            shares = answer_log_shares(last_logits(model, item.inputs()), tokens)
            scores.append(float(expected_scores(shares, tokens.scale)[0]))
    return scores


def weighted_loss(model: Any, items: Sequence[Item], tokens: Any) -> float:
    """The mean weighted readout loss over ``items``, without gradients (the class-prior check's)."""
    import torch

    total = 0.0
    model.eval()
    with torch.no_grad():
        for item in items:
            shares = answer_log_shares(last_logits(model, item.inputs()), tokens)
            total += float(weighted_nll(shares, [item.target], [item.weight]).sum())
    return total / len(items)


def make_optimizer(model: Any, lr: float) -> Any:
    """AdamW over the trainable weights, no weight decay (a few hundred steps on few examples)."""
    import torch

    return torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)


def train_step(model: Any, optimizer: Any, batch: Sequence[Item], tokens: Any, max_grad_norm: float) -> float:
    """One optimizer step over ``batch`` (gradients accumulated example by example); its loss."""
    import torch

    model.train()
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for item in batch:
        shares = answer_log_shares(last_logits(model, item.inputs()), tokens)
        loss = weighted_nll(shares, [item.target], [item.weight]).sum()
        (loss / len(batch)).backward()
        total += float(loss.detach())
    torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], max_grad_norm)
    optimizer.step()
    return total / len(batch)


def train(
    model: Any,
    items: Sequence[Item],
    tokens: Any,
    schedule: Schedule,
    checkpoints: Path,
    state: TrainState | None = None,
    optimizer: Any = None,
) -> TrainState:
    """Train from ``state`` (a resumed one, or the start) to ``schedule.epochs``; a checkpoint after
    every epoch into ``checkpoints``. Returns the final state."""
    state = state or TrainState()
    optimizer = optimizer or make_optimizer(model, schedule.lr)
    per_epoch = len(steps_of(range(len(items)), schedule.grad_accum))
    bar = progress_bar(schedule.epochs * per_epoch, "fine-tune", "step", initial=state.step)
    try:
        for epoch in range(state.epoch, schedule.epochs):
            losses = []
            for batch in steps_of(epoch_order(len(items), schedule.seed, epoch), schedule.grad_accum):
                lr = step_lr(schedule.lr, schedule.lr_schedule, state.step, schedule.epochs * per_epoch)
                for group in optimizer.param_groups:
                    group["lr"] = lr
                losses.append(
                    train_step(model, optimizer, [items[i] for i in batch], tokens, schedule.max_grad_norm)
                )
                state.step += 1
                state.step_losses.append(losses[-1])
                bar.set_postfix(epoch=epoch + 1, loss=f"{losses[-1]:.4f}", refresh=False)
                bar.update(1)
            state.epoch_losses.append(float(np.mean(losses)))
            state.epoch = epoch + 1
            save_checkpoint(checkpoints, model, optimizer, state)
    finally:
        bar.close()
    return state


def save_checkpoint(folder: Path, model: Any, optimizer: Any, state: TrainState) -> Path:
    """``folder/epoch-<n>.pt``: the trained weights, the optimizer and the state after epoch n."""
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"epoch-{state.epoch}.pt"
    payload = {"weights": trainable_state(model), "optimizer": optimizer.state_dict(), "state": asdict(state)}
    torch.save(payload, path.with_suffix(".tmp"))
    path.with_suffix(".tmp").replace(path)  # a crash mid-write never leaves a torn checkpoint
    for older in folder.glob(CHECKPOINT_GLOB):  # resuming needs the latest only
        if older != path:
            older.unlink()
    return path


def latest_checkpoint(folder: Path) -> Path | None:
    """The checkpoint of the most epochs in ``folder`` (``None`` when there is none)."""
    found = sorted(folder.glob(CHECKPOINT_GLOB), key=lambda p: int(p.stem.split("-")[1]))
    return found[-1] if found else None


def resume(path: Path, model: Any, lr: float) -> tuple[TrainState, Any]:
    """The state and the optimizer saved in ``path``, its weights put back into ``model``."""
    import torch

    payload = torch.load(path, map_location="cpu", weights_only=False)
    load_trainable_state(model, payload["weights"])
    optimizer = make_optimizer(model, lr)
    optimizer.load_state_dict(payload["optimizer"])
    return TrainState(**payload["state"]), optimizer
