"""The steps of ``reward-eval finetune``, each a function the command calls in order.

1. :func:`build_dataset`: the episodes of the runs or the labelled set (:mod:`.sources`), each as the
   env sent it and re-encoded, with their counterfactuals, into ``OUT/finetune/videos`` (:mod:`.dataset`);
2. :func:`load_judge`: the base checkpoint, its processor, what is trained (:mod:`.lora`) and how
   an example reaches it (the server's steps, :mod:`.inputs`);
3. :func:`fine_tune`: the readout of every example before, the training (resumed from the last
   epoch's checkpoint with ``--resume``), the readout after, the class-prior check;
4. :func:`save_judge`: the merged checkpoint into ``OUT``;
5. :func:`evaluate`: the base and the fine-tuned judge on real servers, the held-out metrics, and
   the served fine-tuned judge on its own training examples against the trainer's readout of them,
   and on the training episodes' kept videos as the env sent them (:mod:`.serving_check`).

The command (:mod:`reward_eval.commands.finetune`) owns the options, the messages and the exit
statuses; the summary these steps fill is what ``finetune.json`` holds.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reward_eval.finetune import settings as defaults
from reward_eval.finetune.dataset import (
    Example,
    build_examples,
    check_examples,
    data_summary,
)
from reward_eval.finetune.inputs import InputCache, Request
from reward_eval.finetune.readout import at_class_prior, prior_floor, target_index
from reward_eval.finetune.report import REPORT_DIR
from reward_eval.finetune.sources import DEFAULT_SUITE, DataSource, wrong_instruction_lookup
from reward_eval.finetune.split import class_weights
from reward_eval.finetune.trainer import Item, Schedule, TrainState

FINGERPRINT_FILE = "fingerprint.json"


class ResumeError(ValueError):
    """``--resume`` found checkpoints of another data set or other options (exit status 2)."""


@dataclass
class TrainedJudge:
    """The model being trained and everything that shows it an example as the server would."""

    model: Any
    processor: Any
    family: Any
    method: str
    tokens: Any
    request: Request
    cache: InputCache
    parameters: int
    save_dtype: Any


@dataclass
class Outcome:
    """What :func:`fine_tune` found: the training block of the summary, the class-prior verdict and
    the readouts the evaluation compares its servers with."""

    training: dict[str, Any]
    prior_message: str | None = None
    before: dict[str, float] = field(default_factory=dict)  # held-out video -> the base's readout
    after: dict[str, float] = field(default_factory=dict)  # training video -> the trained readout


def build_dataset(
    args: argparse.Namespace, source: DataSource, out: Path
) -> tuple[list[Example], dict[str, Any]]:
    """Every example of ``source`` (held-out and test ones flagged) and the summary's data block;
    ``DataError`` when they cannot train and measure a judge."""
    suite = source.suite or DEFAULT_SUITE
    examples, unreadable = build_examples(
        source.episodes,
        source.splits,
        out / REPORT_DIR / "videos",
        args.counterfactuals,
        source.hard_negatives,
        seed=args.seed,
        wrong_instructions=wrong_instruction_lookup(suite, args.wrong_instructions, args.seed),
    )
    check_examples(examples)
    data = data_summary(examples, unreadable)
    return examples, data if source.record is None else {**data, "labelled_set": dict(source.record)}


def load_judge(args: argparse.Namespace, family: Any, request: Request) -> TrainedJudge:
    """The base checkpoint on ``--device`` in ``--dtype``, made trainable by the resolved method."""
    import torch
    import transformers

    from reward_eval.finetune.lora import default_targets, make_trainable
    from vlm_reward.backends import video_positions, vision_encoder
    from vlm_reward.backends.hf_generation import limit_cpu_threads, torch_dtype
    from vlm_reward.judging.probability import AnswerTokens

    if args.device == "cpu":
        limit_cpu_threads(torch)
    torch.manual_seed(args.seed)
    processor = transformers.AutoProcessor.from_pretrained(args.model)
    model = getattr(transformers, family.model_class).from_pretrained(
        args.model, dtype=torch_dtype(torch, args.dtype, args.device)
    )
    vision_encoder.install(model)  # the server's vision encoder, so training sees what is served
    video_positions.install(model)  # and its positions (time in them, as vLLM places a video)
    save_dtype = checkpoint_dtype(args.model, model.dtype)
    parameters = sum(p.numel() for p in model.parameters())
    method = defaults.resolve_method(args.method, parameters)
    targets = args.lora_targets or default_targets(family)
    model = make_trainable(model.to(args.device), method, args.lora_rank, args.lora_alpha, targets)
    spec = request.prompt()
    tokens = AnswerTokens.from_tokenizer(processor.tokenizer, spec.answer_scale)
    cache = InputCache(processor, family, spec, enabled=args.cache_inputs)
    return TrainedJudge(model, processor, family, method, tokens, request, cache, parameters, save_dtype)


def checkpoint_dtype(model_path: str, fallback: Any) -> Any:
    """The dtype the base checkpoint is stored in (its ``config.json``), which the merged one keeps."""
    import torch

    config_path = Path(model_path) / "config.json"
    config = json.loads(config_path.read_text()) if config_path.is_file() else {}
    name = config.get("torch_dtype") or config.get("dtype")
    return getattr(torch, name) if isinstance(name, str) and hasattr(torch, name) else fallback


def items_of(judge: TrainedJudge, examples: Sequence[Example], weights: Mapping[bool, float]) -> list[Item]:
    """The loop's items: each example's cached inputs (the server's job for it), target and weight."""
    scale = judge.cache.spec.answer_scale

    def item(x: Example) -> Item:
        job = judge.request.job(x.task_text, x.video, x.frames)
        return Item(
            x.video,
            lambda: judge.cache.get(x.video, job).to(judge.model.device),
            target_index(scale, x.label),
            weights[x.label],
        )

    return [item(x) for x in examples]


def fingerprint(args: argparse.Namespace, judge: TrainedJudge, examples: Sequence[Example]) -> dict[str, Any]:
    """What a resumed run must share with the one it resumes: data, model, method, schedule but epochs.

    ``native_frame_size`` joins the request, and ``lr_schedule`` the print, only when not their
    default, so the runs from before them still resume."""
    request = [judge.request.nframes, judge.request.max_pixels, dict(judge.request.backend_kwargs)]
    if judge.request.native_frame_size:
        request.append({"native_frame_size": True})
    schedule = {"lr_schedule": args.lr_schedule} if args.lr_schedule != "constant" else {}
    return {
        **schedule,
        "model": str(args.model),
        "method": judge.method,
        "lr": args.lr,
        "grad_accum": args.grad_accum,
        "seed": args.seed,
        "lora": [args.lora_rank, args.lora_alpha, args.lora_targets],
        "class_weights": args.class_weights,
        "request": request,
        "examples": [[Path(x.video).name, x.label, x.held_out] for x in examples],
    }


def start_state(
    args: argparse.Namespace, judge: TrainedJudge, examples: Sequence[Example], folder: Path
) -> tuple[TrainState | None, Any, dict[str, Any] | None]:
    """``(state, optimizer, saved readouts)`` to continue from with ``--resume`` (``None``s for a new
    run); ``ValueError`` when the checkpoint belongs to another data set or other options."""
    from reward_eval.finetune.trainer import latest_checkpoint, resume

    path = folder / FINGERPRINT_FILE
    print_ = fingerprint(args, judge, examples)
    latest = latest_checkpoint(folder / "checkpoints")
    if not args.resume or latest is None:
        return None, None, None
    saved = json.loads(path.read_text()) if path.is_file() else {}
    if saved.get("fingerprint") != print_:
        raise ResumeError(
            f"--resume: the checkpoints in {folder} were trained on other data or options; resume with "
            "the same runs and options (only --epochs may change), or start over with --overwrite."
        )
    state, optimizer = resume(latest, judge.model, args.lr)
    return state, optimizer, saved.get("readouts")


def base_readouts(
    args: argparse.Namespace,
    judge: TrainedJudge,
    examples: Sequence[Example],
    items: Any,
    held: Any,
    folder: Path,
) -> tuple[TrainState | None, Any, dict[str, list[float]]]:
    """Where training starts (a resumed state and optimizer, or ``None``s) and the base judge's
    readout of the training and held-out examples (read now, or kept from the run resumed)."""
    from reward_eval.finetune.trainer import read_scores

    state, optimizer, readouts = start_state(args, judge, examples, folder)
    if readouts is None:
        readouts = {
            "train_before": read_scores(judge.model, items, judge.tokens),
            "held_out_before": read_scores(judge.model, held, judge.tokens),
        }
        saved = {"fingerprint": fingerprint(args, judge, examples), "readouts": readouts}
        (folder / FINGERPRINT_FILE).write_text(json.dumps(saved))
    return state, optimizer, readouts


def fine_tune(
    args: argparse.Namespace, judge: TrainedJudge, examples: Sequence[Example], out: Path
) -> Outcome:
    """Train the judge on the training examples (see the module docstring); the outcome's training
    block has the schedule, the loss curve, the floor and both readouts of every example."""
    from reward_eval.finetune.trainer import read_scores, train, weighted_loss

    train_set = [x for x in examples if not x.held_out]
    weights = class_weights(x.label for x in train_set) if args.class_weights else {True: 1.0, False: 1.0}
    items = items_of(judge, train_set, weights)
    held_items = items_of(judge, [x for x in examples if x.held_out], weights)
    args.lr = defaults.resolve_lr(args.lr, judge.method)
    folder = out / REPORT_DIR
    state, optimizer, readouts = base_readouts(args, judge, examples, items, held_items, folder)
    epochs = defaults.resolve_epochs(args.epochs, len(items), args.grad_accum)
    schedule = Schedule(epochs, args.grad_accum, args.lr, args.max_grad_norm, args.seed, args.lr_schedule)
    state = train(judge.model, items, judge.tokens, schedule, folder / "checkpoints", state, optimizer)
    after = read_scores(judge.model, items, judge.tokens)
    loss = weighted_loss(judge.model, items, judge.tokens)
    floor = prior_floor([x.label for x in train_set], [it.weight for it in items])
    training = {
        "epochs": epochs,
        "steps": state.step,
        "step_losses": state.step_losses,
        "epoch_losses": state.epoch_losses,
        "final_loss": loss,
        "prior_floor": floor,
        "class_weights": {"success": weights[True], "failure": weights[False]},
        "input_seconds": round(judge.cache.seconds, 3),
        **score_blocks(train_set, readouts["train_before"], after),
    }
    held = dict(zip([x.video for x in examples if x.held_out], readouts["held_out_before"], strict=True))
    trained = dict(zip([x.video for x in train_set], after, strict=True))
    return Outcome(training, at_class_prior(loss, floor, after), held, trained)


def score_blocks(
    train_set: Sequence[Example], before: Sequence[float], after: Sequence[float]
) -> dict[str, Any]:
    """The training block's ``separation`` (before and after, :func:`.metrics.separation`) and
    ``train_scores`` (every training example's readout before and after)."""
    from reward_eval.finetune.metrics import separation

    labels = [x.label for x in train_set]
    return {
        "separation": {"before": separation(before, labels), "after": separation(after, labels)},
        "train_scores": [
            {"video": Path(x.video).name, "source": x.source, "label": x.label, "before": b, "after": a}
            for x, b, a in zip(train_set, before, after, strict=True)
        ],
    }


def save_judge(judge: TrainedJudge, out: Path) -> None:
    """The merged checkpoint into ``out`` (config, processor, safetensors; see :mod:`.lora`)."""
    from reward_eval.finetune.lora import merged_model, save_merged

    model = merged_model(judge.model, judge.method)
    save_merged(model.cpu(), judge.processor, out, judge.family, judge.save_dtype)


def evaluate(
    args: argparse.Namespace,
    examples: Sequence[Example],
    out: Path,
    block: Mapping[str, Any],
    outcome: Outcome,
) -> dict[str, Any]:
    """Both judges on real servers: the summary's evaluation block (``base``, ``fine_tuned``:
    :func:`.metrics.judge_block` over the held-out examples; ``test``, a labelled set's only: both
    blocks over its test examples; ``threshold``; the largest difference
    between the server's base scores and the training's readout of the same examples; ``serving``:
    the fine-tuned server on the training examples against the trainer's readout,
    :func:`.serving_check.serving_check`; ``sources``: the same server on the training episodes'
    kept videos, sent through the env's client as ``rescore`` sends them, against the trainer's
    readout and their re-encodes, :func:`.serving_check.source_check`)."""
    from reward_eval.finetune import serving_check as check
    from reward_eval.finetune.metrics import measured_rows, split_blocks
    from reward_eval.finetune.served_judge import judge_examples
    from reward_eval.judge.endpoint import served_backend

    held = [x for x in examples if x.held_out]
    train = [x for x in examples if not x.held_out]
    sources = check.source_examples(train)
    threshold = float(block["success_threshold"])
    logs = out / REPORT_DIR
    base = judge_examples(args, str(args.model), held, block, logs / "server_base.log", "base judge")
    # One server of the fine-tuned judge for all: the held-out examples, its training ones, then the
    # training episodes as the env sent them.
    tuned = judge_examples(
        args, str(out), held + train + sources, block, logs / "server_fine_tuned.log", "fine-tuned judge"
    )
    served_held, served_train = tuned[: len(held)], tuned[len(held) : len(held) + len(train)]
    judged = {"base": base, "fine_tuned": served_held}
    diffs = [abs(j["score"] - outcome.before[j["video"]]) for j in base if j["score"] is not None]
    return {
        "threshold": threshold,
        **split_blocks(judged, measured_rows(args.counterfactuals, args.wrong_instructions), threshold),
        "readout_vs_server_max_abs_diff": max(diffs) if diffs else None,
        "serving": check.serving_check(
            served_train, outcome.after, args.serving_tolerance, served_backend(args)
        ),
        "sources": check.source_check(
            tuned[len(held) + len(train) :],
            check.sent_readouts(train, outcome.after),
            check.reencoded_scores(served_train),
            args.serving_tolerance,
            threshold,
        ),
        "judged": judged,
    }
