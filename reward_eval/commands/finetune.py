"""Fine-tune a Qwen-VL judge on simulator-labelled episodes, then measure it against its base.

``python -m reward_eval finetune RUN_DIR [RUN_DIR...] --model BASE --out DIR`` (see ``--help``):
the runs' kept videos labelled by native success, plus counterfactual negatives of every success
(the audit's perturbations, ``--counterfactuals``), every episode both as the env sent it and
re-encoded as the counterfactuals are, split by initial state (and ``--holdout-tasks``);
the judge trained on its own probability-mode readout exactly as the server shows it each video
(:mod:`..finetune`); the merged checkpoint written to DIR, which every backend serves with
``--model DIR``; then the base and the fine-tuned judge on real reward servers over the held-out
examples, side by side in the terminal, ``DIR/finetune.json`` and ``DIR/finetune/report.html``.

Exit status: 0 done; 1 a judge server could not be started; 2 bad options (an unknown
perturbation, an unsupported or missing base checkpoint, an existing DIR without ``--overwrite``
or ``--resume``, a ``--resume`` that does not match its checkpoints); 3 the runs cannot make a data
set (a run without kept videos, one class only, an empty held-out split); 4 training ended at the
class prior (the judge answers alike for every video; nothing is written to DIR but
``finetune.json`` and the report, which say so); 5 the served fine-tuned judge does not answer its
own training examples as the trainer read them, or its training episodes as the env sent them
(beyond ``--serving-tolerance``, a verdict the encoding changes, or a call that failed:
:mod:`..finetune.serving_check`; the judge is written, and ``finetune.json`` and the report say
which examples).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reward_eval.analysis.perturbations import perturbation_names
from reward_eval.exit_statuses import (
    EXIT_BAD_DATA,
    EXIT_CLASS_PRIOR,
    EXIT_JUDGE_UNAVAILABLE,
    EXIT_SERVING_SKEW,
)
from reward_eval.finetune import settings as defaults
from reward_eval.finetune.dataset import TEST, DataError
from reward_eval.finetune.pipeline import ResumeError
from reward_eval.finetune.report import REPORT_DIR, base_summary, terminal_table, write_report, write_summary
from reward_eval.job.options import NONE, counterfactual_names, positive_float
from reward_eval.judge.endpoint import DEFAULT_LOCAL_BACKEND, JUDGE_ERRORS
from vlm_reward.argtypes import float_at_least, json_object, non_negative_int, positive_int, unit_interval
from vlm_reward.exit_statuses import EXIT_BAD_OPTIONS, EXIT_OK
from vlm_reward.tools.server_process import START_TIMEOUT_S


def task_list(text: str) -> tuple[str, ...]:
    """argparse type of ``--holdout-tasks``: comma-separated task ids."""
    ids = tuple(part.strip() for part in text.split(",") if part.strip())
    if not ids:
        raise argparse.ArgumentTypeError(f"expected comma-separated task ids like 1,7, got {text!r}")
    return ids


def build_parser() -> argparse.ArgumentParser:
    """The ``finetune`` command line."""
    p = argparse.ArgumentParser(
        prog="python -m reward_eval finetune",
        description="Fine-tune a Qwen2.5-VL / Qwen3-VL judge on runs' kept episode videos (labels: native "
        "success) and counterfactual negatives, and compare it with its base on held-out episodes. Exit "
        "status: 0 done, 1 judge server unavailable, 2 bad options, 3 unusable data, 4 ended at the class "
        "prior, 5 the served judge does not answer its training examples (or episodes as the env sent them) "
        "as trained.",
    )
    p.add_argument("runs", nargs="*", type=Path, metavar="RUN_DIR", help="run dirs with kept videos")
    p.add_argument(
        "--data",
        type=Path,
        action="append",
        metavar="DIR",
        help="train on a labelled frame set instead of runs (the one train-classifier reads, e.g. "
        "reward_eval/classifier/data): its manifest's split, train trains, held_out measures, test is "
        "reported apart; repeat it to train on several sets at once (none may put an initial state on "
        "another split than the others do)",
    )
    p.add_argument("--model", required=True, help="base checkpoint directory (Qwen2.5-VL or Qwen3-VL)")
    p.add_argument("--out", type=Path, required=True, help="the fine-tuned checkpoint directory to write")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.add_argument("--resume", action="store_true", help="continue --out's training from its last epoch")
    data = p.add_argument_group("data")
    data.add_argument(
        "--counterfactuals",
        type=counterfactual_names,
        default=perturbation_names(),
        help=f"negatives made of each success (default: all: {','.join(perturbation_names())}; {NONE}: off)",
    )
    data.add_argument(
        "--wrong-instructions",
        type=non_negative_int,
        default=0,
        metavar="K",
        help="also judge each success under K wrong instructions, none of them a text of the suite it is "
        "measured on: recombined basket pairs and other LIBERO suites' texts (default %(default)s)",
    )
    data.add_argument(
        "--holdout-fraction",
        type=unit_interval,
        default=defaults.DEFAULT_HOLDOUT_FRACTION,
        help="share of initial states held out (default %(default)s)",
    )
    data.add_argument(
        "--holdout-tasks", type=task_list, default=(), help="task ids held out entirely, e.g. 1,7"
    )
    data.add_argument("--seed", type=int, default=0, help="seed of the split, the order and the shuffles")
    data.add_argument(
        "--env-config",
        type=Path,
        help="env YAML whose reward_model block the judge is trained for and served with (default: the "
        "one every run recorded, else the repo's libero_10.yaml)",
    )
    add_training_options(p)
    add_evaluation_options(p)
    return p


def add_training_options(p: argparse.ArgumentParser) -> None:
    """The training group: method, LoRA, schedule, device."""
    t = p.add_argument_group("training")
    t.add_argument(
        "--method",
        choices=defaults.METHOD_CHOICES,
        default="auto",
        help="auto: full below 1B parameters, else lora",
    )
    t.add_argument("--lora-rank", type=positive_int, default=defaults.DEFAULT_LORA_RANK)
    t.add_argument("--lora-alpha", type=float_at_least(0, strict=True), default=defaults.DEFAULT_LORA_ALPHA)
    t.add_argument("--lora-targets", help="peft target_modules regex (default: the model family's)")
    t.add_argument("--lr", type=float_at_least(0, strict=True), help="default: 1e-3 full, 1e-4 lora")
    t.add_argument(
        "--lr-schedule",
        choices=defaults.LR_SCHEDULES,
        default="constant",
        help="constant, or cosine: down to 0 by the last step (default %(default)s)",
    )
    t.add_argument(
        "--epochs", type=positive_int, help=f"default: enough for {defaults.DEFAULT_STEPS} optimizer steps"
    )
    t.add_argument(
        "--grad-accum",
        type=positive_int,
        default=defaults.DEFAULT_GRAD_ACCUM,
        help="examples per optimizer step",
    )
    t.add_argument("--max-grad-norm", type=float_at_least(0, strict=True), default=1.0)
    t.add_argument(
        "--class-weights", action=argparse.BooleanOptionalAction, default=True, help="balance the classes"
    )
    t.add_argument(
        "--cache-inputs", action=argparse.BooleanOptionalAction, default=True, help="keep processed videos"
    )
    t.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    t.add_argument("--dtype", default="auto", help="auto (float32 on cpu), float32, bfloat16, float16")


def add_evaluation_options(p: argparse.ArgumentParser) -> None:
    """The evaluation group: which backend serves both judges, and how they are asked."""
    e = p.add_argument_group("before/after evaluation (local reward servers)")
    e.add_argument(
        "--evaluate", action=argparse.BooleanOptionalAction, default=True, help="judge the held-out split"
    )
    e.add_argument("--backend", help=f"backend of both servers (default {DEFAULT_LOCAL_BACKEND})")
    e.add_argument(
        "--plugin", action="append", default=[], metavar="MODULE", help="the servers' --plugin (repeatable)"
    )
    e.add_argument(
        "--server-kwargs", type=json_object, default={}, help="the servers' --backend-kwargs (JSON)"
    )
    e.add_argument(
        "--backend-kwargs",
        type=json_object,
        help="per-request backend_kwargs, e.g. a prompt, merged key by key over the env YAML's; the "
        "training asks the same",
    )
    e.add_argument("--threshold", type=unit_interval, help="success threshold (default: the env YAML's)")
    e.add_argument(
        "--concurrency", type=positive_int, default=4, help="calls in parallel (default %(default)s)"
    )
    e.add_argument(
        "--serving-tolerance",
        type=unit_interval,
        default=defaults.DEFAULT_SERVING_TOLERANCE,
        help="largest difference allowed between the served judge's score of a training example (and of a "
        "training episode as the env sent it) and the trainer's readout of it (default %(default)s; beyond "
        "it: exit status 5)",
    )
    e.add_argument(
        "--request-timeout", type=positive_float, help="seconds per call (default: the env YAML's timeout)"
    )
    e.add_argument(
        "--server-start-timeout",
        type=positive_float,
        default=START_TIMEOUT_S,
        help="seconds to wait for each server's /health (default %(default)s)",
    )
    # The scoring options of the other commands that the fine-tune does not take: not given.
    p.set_defaults(endpoint=None, send_video_inline=None, binary_reward=None, score_mode=None, ca_bundle=None)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse and check the options that need no data (exit 2 with one sentence)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    from vlm_reward.backends.hf_generation import check_load_settings
    from vlm_reward.judging.model_family import checkpoint_family

    try:
        args.family = checkpoint_family(args.model)
        check_load_settings({"device": args.device, "dtype": args.dtype})
    except ValueError as exc:
        parser.error(str(exc))
    if args.family is None:
        parser.error(f"--model must be a local checkpoint directory, got the hub id {args.model!r}.")
    check_data_source(parser, args)
    args.out = args.out.resolve()
    args.runs = [run.resolve() for run in args.runs]
    if args.out == Path(args.model).resolve() or args.out in args.runs:
        parser.error(f"--out {args.out} is the base checkpoint or a run dir; write the judge elsewhere.")
    if args.out.exists() and any(args.out.iterdir()) and not (args.overwrite or args.resume):
        parser.error(f"--out {args.out} exists; pass --overwrite to replace it or --resume to continue it.")
    if args.overwrite and args.resume:
        parser.error("--overwrite starts over and --resume continues; pass one.")
    return args


def check_data_source(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit 2 unless the data is either run dirs or ``--data``, and the split options fit it."""
    if bool(args.runs) == (args.data is not None):
        parser.error("give the run dirs to train on, or --data DIR for a labelled frame set (not both).")
    if args.data is not None:
        args.data = [path.resolve() for path in args.data]
        if args.holdout_tasks or args.holdout_fraction != defaults.DEFAULT_HOLDOUT_FRACTION:
            parser.error(
                "--data trains on the labelled set's own split; drop --holdout-fraction and --holdout-tasks."
            )


def data_source(args: argparse.Namespace) -> Any:
    """The runs' episodes, or the labelled sets' with ``--data``."""
    if args.data is not None:
        from reward_eval.classifier.finetune_data import labelled_source

        return labelled_source(args.data)
    from reward_eval.finetune.sources import run_source

    return run_source(args)


def finetune(args: argparse.Namespace) -> int:
    """Execute the command for parsed ``args``; returns the exit status (see the module docstring)."""
    from reward_eval.finetune import pipeline
    from reward_eval.finetune.served_judge import judge_block, training_request

    if args.overwrite and args.out.exists():
        shutil.rmtree(args.out)
    (args.out / REPORT_DIR).mkdir(parents=True, exist_ok=True)
    judged = judge_block(args)
    block = dict(judged.block.values)
    examples, data = pipeline.build_dataset(args, data_source(args), args.out)
    judge = pipeline.load_judge(args, args.family, training_request(block, args.server_kwargs))
    outcome = pipeline.fine_tune(args, judge, examples, args.out)
    summary = {**base_summary(args, judge, data, outcome.training), "judge_settings": judged.recorded()}
    if outcome.prior_message:
        return report_prior(args, summary, outcome.prior_message)
    pipeline.save_judge(judge, args.out)
    if args.evaluate:
        summary["evaluation"] = pipeline.evaluate(args, examples, args.out, block, outcome)
    return finish(args, summary)


def serve_command(args: argparse.Namespace) -> str:
    """The line that serves the fine-tuned judge (the default vLLM backend on a GPU machine)."""
    return f"bash examples/embodiment/scripts/start_reward_server.sh qwen_vl_vllm {args.out}"


def report_prior(args: argparse.Namespace, summary: dict[str, Any], message: str) -> int:
    """Write the summary and the report of a run that ended at the class prior; status 4."""
    summary.update(outcome="class_prior", message=message)
    write_summary(args.out, summary)
    page = write_report(args.out, summary)
    print(f"[reward-eval] fine-tune failed: {message}; no judge written (report: {page}).", file=sys.stderr)
    return EXIT_CLASS_PRIOR


def skew_of(evaluation: dict[str, Any]) -> str | None:
    """Why the fine-tune's check of itself failed (:mod:`..finetune.serving_check`): the training
    examples as served against the trainer, then the training episodes as the env sent them;
    ``None`` when both passed or nothing was evaluated."""
    from reward_eval.finetune.serving_check import skew_message, source_skew_message

    check, sources = evaluation.get("serving"), evaluation.get("sources")
    found = None if check is None else skew_message(check)
    return found or (None if sources is None else source_skew_message(sources))


def finish(args: argparse.Namespace, summary: dict[str, Any]) -> int:
    """Write ``finetune.json`` and the report; print the table, the two lines of the check and the
    command that serves the judge; status 5 (and why, on stderr) when the served judge failed the check."""
    from reward_eval.finetune.serving_check import check_line, source_line

    summary["serve_command"] = serve_command(args)
    evaluation = summary.get("evaluation", {})
    skew = skew_of(evaluation)
    if skew:
        summary.update(outcome="serving_skew", message=skew)
    write_summary(args.out, summary)
    page = write_report(args.out, summary)
    if evaluation.get("serving") is not None:
        print(terminal_table(evaluation))
        if evaluation.get(TEST):
            print(terminal_table(evaluation[TEST] | {"threshold": evaluation["threshold"]}, "test"))
        print(f"[reward-eval] {check_line(evaluation['serving'])}")
    if evaluation.get("sources") is not None:
        print(f"[reward-eval] {source_line(evaluation['sources'])}")
    print(f"[reward-eval] fine-tuned judge: {args.out} (report: {page})")
    if skew:
        print(f"[reward-eval] fine-tune check failed: {skew}.", file=sys.stderr)
        return EXIT_SERVING_SKEW
    print(f"[reward-eval] serve it: {summary['serve_command']}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    args = parse_args(argv)
    try:
        return finetune(args)
    except ResumeError as exc:
        print(f"[reward-eval] error: {exc}", file=sys.stderr)
        return EXIT_BAD_OPTIONS
    except DataError as exc:
        print(f"[reward-eval] cannot fine-tune: {exc}", file=sys.stderr)
        return EXIT_BAD_DATA
    except JUDGE_ERRORS as exc:
        print(f"[reward-eval] error: {exc}", file=sys.stderr)
        return EXIT_JUDGE_UNAVAILABLE


if __name__ == "__main__":
    sys.exit(main())
