"""Train RLinf's ResNet success classifier on a labelled frame set, then measure it before/after.

``python -m reward_eval train-classifier [DATA] --out DIR`` (see ``--help``): the set's training
frames, each labelled by the simulator through the training target (``--target``:
:mod:`vlm_reward.backends.classifier_targets`; :mod:`..classifier.frame_data`), train RLinf's
``ResNetRewardModel`` built through its own config (:mod:`vlm_reward.backends.resnet_checkpoint`,
``pretrained: False`` unless ``--pretrained``) with RLinf's loss (:mod:`..classifier.training`);
DIR is then a checkpoint the ``resnet`` backend serves (``--backend resnet --model DIR``), which
records its target and the initial states it was trained on. The untrained and the trained
classifier are measured on the set's held-out episodes and the counterfactuals of their successes
(:mod:`..classifier.held_out`), and apart on its test episodes, side by side in the terminal, in
``DIR/finetune.json`` and ``DIR/finetune/report.html``, as ``reward-eval finetune`` reports; beside
them every served frame's score against the simulator's progress and the judged successes per
policy variant (:mod:`..classifier.measures`).

**A graded target** (``goal_fraction``) takes the same path: the draw balances its label values
(0, 0.5 and 1 a third each, where a 0/1 target's are half each), the data's counts are per label
value, the class-prior floor is the loss of the best constant answer (``ln 2`` for both), and the
measured numbers stay what they are for every target: AUROC against the native success of the
episodes, and the frames' Pearson correlation with ``goal_fraction``.

Exit status: 0 done; 2 bad options (DATA is not a labelled frame set, an ``--image-size`` larger
than its frames, an existing DIR without ``--overwrite``); 3 the set cannot train and measure a
classifier (one label value only among its training frames, a held-out split without both
native outcomes); 4 training ended at the class prior (the same probability for every frame, or
the loss of a constant answer; nothing is written to DIR but ``finetune.json`` and the report,
which say so).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from reward_eval.analysis.perturbations import perturbation_names
from reward_eval.classifier.labelled_set import DEFAULT_DATA_DIR, MEASURED, LabelledSet, load_set
from reward_eval.exit_statuses import EXIT_BAD_DATA, EXIT_CLASS_PRIOR
from reward_eval.finetune.report import write_report, write_summary
from reward_eval.job.options import counterfactual_names
from vlm_reward.argtypes import float_at_least, non_negative_int, positive_int, unit_interval
from vlm_reward.backends.classifier_targets import TARGETS, get_target
from vlm_reward.backends.resnet_checkpoint import ARCHS, ClassifierConfig
from vlm_reward.exit_statuses import EXIT_OK
from vlm_reward.protocol import DEFAULT_NFRAMES
from vlm_reward.verdict import DEFAULT_SUCCESS_THRESHOLD

DEFAULTS = ClassifierConfig()  # the classifier's defaults are its config's (chosen there, by measurement)
# Six epochs of every labelled frame of the shipped set's training episodes take about a minute on
# a quiet machine here (benchmark 15); ten gave the same held-out numbers.
DEFAULT_EPOCHS = 6


class DataError(ValueError):
    """The set cannot train and measure a classifier (exit status 3)."""


def build_parser() -> argparse.ArgumentParser:
    """The ``train-classifier`` command line."""
    p = argparse.ArgumentParser(
        prog="python -m reward_eval train-classifier",
        description="Train RLinf's ResNet success classifier on simulator-labelled frames and compare it "
        "with its untrained self on held-out episodes. Exit status: 0 done, 2 bad options, 3 unusable "
        "data, 4 ended at the class prior.",
    )
    p.add_argument(
        "data", nargs="?", type=Path, default=DEFAULT_DATA_DIR, help="labelled frame set (default: shipped)"
    )
    p.add_argument("--out", type=Path, required=True, help="the checkpoint directory to write")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    m = p.add_argument_group("classifier (RLinf's ResNetRewardModel config)")
    m.add_argument("--arch", choices=ARCHS, default=DEFAULTS.arch)
    m.add_argument("--image-size", type=positive_int, default=DEFAULTS.image_size, help="input px (square)")
    m.add_argument("--hidden-dim", type=positive_int, help="an MLP head of this width (default: linear)")
    m.add_argument("--dropout", type=unit_interval, default=DEFAULTS.dropout)
    m.add_argument("--pretrained", action="store_true", help="start from ImageNet weights (downloads them)")
    m.add_argument(
        "--last-k", type=positive_int, default=DEFAULTS.last_k, help="frames the episode score averages"
    )
    targets = "; ".join(f"{t.name}: {t.description}" for t in TARGETS.values())
    m.add_argument(
        "--target",
        choices=tuple(TARGETS),
        default=DEFAULTS.target,
        help=f"what each frame is labelled, from the simulator's verdict ({targets}; default %(default)s)",
    )
    t = p.add_argument_group("training")
    t.add_argument(
        "--frames-per-episode",
        type=positive_int,
        default=DEFAULT_NFRAMES,
        help="last served frames of each episode that train (after-success frames always do; "
        "default %(default)s, the frames the env's client sends: all of them)",
    )
    t.add_argument("--epochs", type=positive_int, default=DEFAULT_EPOCHS)
    t.add_argument("--batch-size", type=positive_int, default=64)
    t.add_argument("--lr", type=float_at_least(0, strict=True), default=1e-3)
    t.add_argument("--weight-decay", type=float_at_least(0), default=1e-4)
    t.add_argument("--shift", type=non_negative_int, default=4, help="random translation in px")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    e = p.add_argument_group("before/after evaluation")
    e.add_argument(
        "--counterfactuals",
        type=counterfactual_names,
        default=perturbation_names(),
        help=f"audit rows made of each held-out success (default: {','.join(perturbation_names())})",
    )
    e.add_argument(
        "--threshold", type=unit_interval, default=DEFAULT_SUCCESS_THRESHOLD, help="success threshold"
    )
    return p


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse and check the options, the set included (exit 2 with one sentence)."""
    from reward_eval.classifier.frame_data import frame_size

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.labelled_set = load_set(args.data)
        size = frame_size(args.labelled_set)
    except ValueError as exc:
        parser.error(str(exc))
    if args.image_size > size:
        parser.error(
            f"--image-size {args.image_size} is larger than the set's {size} px frames; use at most {size}."
        )
    args.out = args.out.resolve()
    if args.out.exists() and any(args.out.iterdir()) and not args.overwrite:
        parser.error(f"--out {args.out} exists; pass --overwrite to replace it.")
    return args


def classifier_config(args: argparse.Namespace) -> ClassifierConfig:
    return ClassifierConfig(
        arch=args.arch,
        image_size=args.image_size,
        hidden_dim=args.hidden_dim,
        dropout=args.dropout,
        last_k=args.last_k,
        target=args.target,
    )


def states_text(episodes: Sequence[Any]) -> list[str]:
    """The initial states of ``episodes`` as "task T trial S", sorted."""
    return [f"task {t} trial {s}" for t, s in sorted({e.state for e in episodes})]


def data_block(labelled_set: LabelledSet, data: Any, target: str) -> dict[str, Any]:
    """The summary's data block, in the fine-tune's shape: the training frames per label value of
    the target, the episodes per split and their successes, the measured splits' states."""
    by_source = {"train episodes": len(labelled_set.split("train"))}
    for split in MEASURED:
        episodes = labelled_set.split(split)
        by_source[f"{split} episodes"] = len(episodes)
        by_source[f"{split} successes"] = sum(e.native_success for e in episodes)
    return {
        "examples": len(data),
        "episodes": len(labelled_set.episodes),
        "by_class": {f"train/{target} = {level:g}": n for level, n in data.level_counts().items()},
        "by_source": by_source,
        "groups": {split: states_text(labelled_set.split(split)) for split in MEASURED},
    }


def load_data(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """The training frames and, per measured split with episodes, its episodes, their served
    frames and its cases; ``DataError`` when they cannot train and measure."""
    from reward_eval.classifier import frame_data, held_out

    labelled = args.labelled_set
    train = labelled.split("train")
    target = get_target(args.target)
    data = frame_data.training_tensors(labelled, train, args.image_size, args.frames_per_episode, target)
    if len(data.level_counts()) < 2:
        raise DataError(
            f"the training frames of {labelled.root} hold one label value only for target {args.target} "
            f"({data.level_counts()} frames per value)."
        )
    if len({e.native_success for e in labelled.split("held_out")}) < 2:
        raise DataError(f"the held-out episodes of {labelled.root} need both successes and failures.")
    measured = {}
    for split in MEASURED:
        if episodes := labelled.split(split):
            videos = frame_data.served_frames(labelled, episodes)
            cases = held_out.examples(episodes, videos, args.counterfactuals, args.seed)
            measured[split] = {"episodes": episodes, "videos": videos, "cases": cases}
    return data, measured


def train_and_measure(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """Build, measure, train and measure again; the model and the summary (``finetune.json``)."""
    import torch

    from reward_eval.classifier import held_out
    from reward_eval.classifier.evaluation import judged_block, trained_measures
    from reward_eval.classifier.training import (
        Schedule,
        fitted_loss,
        irreducible_loss,
        prior_floor,
        probabilities,
        train,
    )
    from reward_eval.finetune.readout import at_class_prior
    from vlm_reward.backends.resnet_checkpoint import build_model

    if args.device == "cpu":
        from vlm_reward.backends.hf_generation import limit_cpu_threads

        limit_cpu_threads(torch)  # torch's default counts the host's cores, not the ones granted
    start = time.perf_counter()
    data, measured = load_data(args)
    loading = round(time.perf_counter() - start, 1)
    config = classifier_config(args)
    torch.manual_seed(args.seed)
    model = build_model(config, pretrained=args.pretrained).to(args.device)
    data.images = data.images.to(args.device)
    before = {split: held_out.judge(model, config, m["cases"]) for split, m in measured.items()}
    schedule = Schedule(args.epochs, args.batch_size, args.lr, args.weight_decay, args.shift, args.seed)
    state = train(model, data, schedule)
    after = {split: held_out.judge(model, config, m["cases"]) for split, m in measured.items()}
    labels, scores = data.labels.numpy(), probabilities(model, data.images)
    floor = prior_floor(labels)  # balanced draws: the best constant answer's loss
    fitted, irreducible = fitted_loss(labels, scores), irreducible_loss(labels)
    training = {
        **asdict(state),
        "steps": state.step,
        "prior_floor": floor,
        "fitted_loss": fitted,
        "irreducible_loss": irreducible,
        "loading_seconds": loading,
    }
    judging = (args.counterfactuals, args.threshold)
    summary = {
        "outcome": "done",
        "message": "",
        "out": str(args.out),
        "runs": [str(args.labelled_set.root)],
        "data": data_block(args.labelled_set, data, args.target),
        "hyper_parameters": hyper_parameters(args, config, schedule),
        "training": training,
        "evaluation": {
            **judged_block(before["held_out"], after["held_out"], *judging),
            **({"test": judged_block(before["test"], after["test"], *judging)} if "test" in measured else {}),
            **trained_measures(model, config, measured, after, args.target, args.threshold),
        },
    }
    # Above the target's own floor, so a graded target's 0.5 frames do not count as "at the prior".
    prior = at_class_prior(fitted - irreducible, floor - irreducible, scores)
    if prior and irreducible > 0:
        prior += f" (both measured above the loss no model goes below for this target, {irreducible:.4f})"
    if prior:
        summary.update(outcome="class_prior", message=prior)
    return model, summary


def hyper_parameters(args: argparse.Namespace, config: ClassifierConfig, schedule: Any) -> dict[str, Any]:
    """The summary's hyper-parameters: the classifier's config, the schedule, the data options."""
    extra = {
        "frames_per_episode": args.frames_per_episode,
        "pretrained": args.pretrained,
        "device": args.device,
    }
    return {**asdict(config), **asdict(schedule), **extra}


def save(args: argparse.Namespace, model: Any, summary: dict[str, Any]) -> None:
    """The checkpoint (config with what it was trained on, weights) into ``--out``."""
    from vlm_reward.backends.resnet_checkpoint import write_checkpoint

    trained = sorted({e.state for e in args.labelled_set.split("train")})
    extra = {
        "data": str(args.labelled_set.root),
        "trained_on": [list(state) for state in trained],
        **summary["data"]["groups"],
        "seed": args.seed,
    }
    write_checkpoint(args.out, classifier_config(args), model.cpu().state_dict(), extra)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status (see the module docstring)."""
    from reward_eval.classifier.report import report_blocks, result_lines

    args = parse_args(argv)
    if args.overwrite and args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        model, summary = train_and_measure(args)
    except DataError as exc:
        print(f"[reward-eval] cannot train a classifier: {exc}", file=sys.stderr)
        return EXIT_BAD_DATA
    summary["serve_command"] = (
        f"python -m vlm_reward.libero_reward_server --backend resnet --model {args.out}"
    )
    if summary["outcome"] == "done":
        save(args, model, summary)
    write_summary(args.out, summary)
    page = write_report(args.out, summary, report_blocks(summary["evaluation"]))
    if summary["outcome"] != "done":
        print(
            f"[reward-eval] training failed: {summary['message']}; no classifier written (report: {page}).",
            file=sys.stderr,
        )
        return EXIT_CLASS_PRIOR
    for line in result_lines(summary["evaluation"]):
        print(line)
    seconds = summary["training"]["seconds"]
    print(f"[reward-eval] classifier: {args.out} (trained in {seconds:.0f} s; report: {page})")
    print(f"[reward-eval] serve it: {summary['serve_command']}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
