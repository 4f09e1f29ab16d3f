"""What a person reads of a fine-tune: ``finetune.json``, ``finetune/report.html``, the terminal.

The page and the terminal table come from the same summary (the dict written to
``finetune.json``): the data (runs, counts per split, class and source), the split, the
hyper-parameters, the loss curve (a PNG beside the page), the base and the fine-tuned judge side
by side on the held-out examples (AUROC, Brier, best F1 and its threshold, the audit's positive
rate per row), the served fine-tuned judge on its training examples beside the trainer's
readout of them, and on its training episodes as the env sent them. The page is built from
:mod:`..report.document`'s blocks like every report here.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reward_eval.finetune.metrics import TABLE_ROWS
from reward_eval.report.document import Alert, Block, Heading, Image, Items, Para, Table, render_html
from reward_eval.report.table import num, pct

SUMMARY_FILE = "finetune.json"
REPORT_DIR = "finetune"
LOSS_PLOT = "loss.png"
JUDGES = ("base", "fine_tuned")


def base_summary(
    args: argparse.Namespace, judge: Any, data: dict[str, Any], training: dict[str, Any]
) -> dict[str, Any]:
    """The summary before the evaluation: outcome, inputs, data, hyper-parameters, training."""
    return {
        "outcome": "done",
        "message": "",
        "out": str(args.out),
        "base_model": str(args.model),
        "family": judge.family.model_type,
        "runs": [str(r) for r in args.runs],
        "data_dirs": [str(d) for d in args.data or ()],
        "data": data,
        "hyper_parameters": {
            "method": judge.method,
            "parameters": judge.parameters,
            "trainable_parameters": sum(p.numel() for p in judge.model.parameters() if p.requires_grad),
            "lr": args.lr,
            "lr_schedule": args.lr_schedule,
            "epochs": training["epochs"],
            "grad_accum": args.grad_accum,
            "max_grad_norm": args.max_grad_norm,
            "seed": args.seed,
            "class_weights": args.class_weights,
            "lora": {"rank": args.lora_rank, "alpha": args.lora_alpha, "targets": args.lora_targets}
            if judge.method == "lora"
            else None,
            "counterfactuals": list(args.counterfactuals),
            "wrong_instructions": args.wrong_instructions,
            "holdout_fraction": args.holdout_fraction,
            "holdout_tasks": list(args.holdout_tasks),
            "prompt_scale": judge.tokens.scale.name,
            "request": judge.request.asked(),
            "device": args.device,
        },
        "training": training,
    }


def write_summary(out: Path, summary: Mapping[str, Any]) -> Path:
    """``out/finetune.json`` (strict JSON: no NaN)."""
    path = out / SUMMARY_FILE
    path.write_text(json.dumps(summary, indent=2, default=str, allow_nan=False) + "\n", encoding="utf-8")
    return path


def loss_plot(path: Path, step_losses: Sequence[float], epoch_losses: Sequence[float], floor: float) -> Path:
    """The loss of every optimizer step and the mean of every epoch, with the class-prior floor."""
    from matplotlib.figure import Figure

    from reward_eval.report.plots import save_figure

    fig = Figure(figsize=(8, 3.5), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(range(1, len(step_losses) + 1), step_losses, color="#264653", linewidth=1, label="step")
    if epoch_losses:
        per = len(step_losses) / len(epoch_losses)
        ends = [round(per * (i + 1)) for i in range(len(epoch_losses))]
        ax.plot(ends, epoch_losses, "o-", color="#e76f51", label="epoch mean")
    ax.axhline(floor, color="black", linestyle="--", linewidth=1, label=f"class-prior floor {floor:.3f}")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("weighted readout loss")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def comparison_rows(evaluation: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """``(metric, base, fine-tuned)`` rows: the judge metrics, then the audit's rate per row
    (``original``: true positives; every other row: false positives)."""
    base, tuned = (evaluation[j] for j in JUDGES)
    rows = [(label, num(base[key]), num(tuned[key])) for label, key in TABLE_ROWS]
    for name in base["audit"]:
        kind = "TPR" if name == "original" else "FPR"
        rows.append((f"{kind} {name}", pct(base["audit"][name]), pct(tuned["audit"].get(name))))
    return rows


def terminal_table(evaluation: Mapping[str, Any], examples: str = "held-out") -> str:
    """The side-by-side table for the terminal (``examples``: which ones, held-out by default)."""
    header = (examples, "base", "fine-tuned")
    rows = [header, *comparison_rows(evaluation)]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{r[0].ljust(widths[0])}  {r[1].rjust(widths[1])}  {r[2].rjust(widths[2])}" for r in rows]
    n = evaluation["base"]["n"]
    return "\n".join([f"{examples} examples: {n} (threshold {evaluation['threshold']:g})", *lines])


def _data_blocks(summary: Mapping[str, Any]) -> list[Block]:
    data = summary["data"]
    by = {
        **data["by_class"],
        **data["by_source"],
        **data.get("by_encoding", {}),
        **data.get("by_frame_size", {}),
    }
    counts = [(k, str(v)) for k, v in by.items()]
    if summary.get("data_dirs"):
        where = f"the labelled set(s) {', '.join(summary['data_dirs'])} (their own split by initial state)"
    else:
        where = f"{len(summary['runs'])} run(s)"
    return [
        Heading("Data"),
        Para(
            f"{data['examples']} examples from {data['episodes']} episodes of {where}; "
            f"held out by initial state: {', '.join(data['groups']['held_out'])}."
        ),
        Table(("split/label, source, encoding or frame size", "examples"), tuple(counts)),
    ]


def report_blocks(summary: Mapping[str, Any]) -> list[Block]:
    """The page: outcome, data, hyper-parameters, loss curve, the two judges side by side."""
    blocks: list[Block] = [Heading(f"Fine-tuned judge: {summary['out']}", 1)]
    if summary["outcome"] != "done":
        blocks.append(Alert(summary["message"]))
    blocks += _data_blocks(summary)
    params = summary["hyper_parameters"]
    blocks += [
        Heading("Training"),
        Items(tuple(f"{k}: {v}" for k, v in params.items())),
        Image(LOSS_PLOT, "training loss per optimizer step"),
    ]
    if summary.get("evaluation"):
        blocks += [
            Heading("Base and fine-tuned judge on the held-out examples"),
            Table(("metric", "base", "fine-tuned"), tuple(comparison_rows(summary["evaluation"]))),
            *test_blocks(summary["evaluation"].get("test")),
            *serving_blocks(summary["evaluation"].get("serving")),
            *source_blocks(summary["evaluation"].get("sources")),
            Para(f"Serve the fine-tuned judge: {summary['serve_command']}"),
        ]
    return blocks


def test_blocks(test: Mapping[str, Any] | None) -> list[Block]:
    """A labelled set's test examples, both judges side by side (nothing chose anything by them)."""
    if not test:
        return []
    return [
        Heading("Base and fine-tuned judge on the test examples"),
        Para("The labelled set's test split: scored once here and reported, never used to choose."),
        Table(("metric", "base", "fine-tuned"), tuple(comparison_rows(test))),
    ]


def _small(value: float | None) -> str:
    """A difference that may be tiny (1e-7) or large (0.98), readable either way."""
    return "n/a" if value is None else f"{value:.2g}"


def serving_blocks(check: Mapping[str, Any] | None) -> list[Block]:
    """The fine-tune's check of itself (:mod:`.serving_check`): every training example as the
    trainer read it and as the served judge scored it."""
    if check is None:
        return []
    rows = tuple(
        (
            r["video"],
            "success" if r["label"] else "failure",
            num(r["trainer"]),
            num(r["served"]),
            num(r["diff"]),
        )
        for r in check["examples"]
    )
    verdict = "within" if check["passed"] else "NOT within"
    return [
        Heading("The served fine-tuned judge on its training examples"),
        Para(
            f"Served by {check['backend']}. Largest difference from the trainer's readout: "
            f"{_small(check['max_abs_diff'])}, {verdict} the tolerance {check['tolerance']:g}."
        ),
        Table(("training example", "label", "trainer", "served", "|served - trainer|"), rows),
    ]


def source_blocks(check: Mapping[str, Any] | None) -> list[Block]:
    """The same check on the training episodes as the env sent them (:func:`.serving_check.source_check`):
    each kept video served, beside the trainer's readout and the served score of its re-encode."""
    if check is None:
        return []
    rows = tuple(
        (
            Path(r["video"]).name,
            "success" if r["label"] else "failure",
            num(r["trainer"]),
            num(r["served"]),
            num(r["reencoded"]),
            num(r["diff"]),
            num(r["codec_diff"]),
        )
        for r in check["examples"]
    )
    verdict = "passed" if check["passed"] else "FAILED"
    return [
        Heading("The served fine-tuned judge on its training episodes as the env sent them"),
        Para(
            f"Each training episode's kept video, sent through the env's client as rescore sends it: "
            f"largest difference from the trainer's readout {_small(check['max_abs_diff'])} (tolerance "
            f"{check['tolerance']:g}), largest from its re-encode {_small(check['max_codec_diff'])}, "
            f"{check['codec_flips']} verdict(s) at {check['threshold']:g} changed by the encoding: {verdict}."
        ),
        Table(
            (
                "kept video",
                "label",
                "trainer",
                "served",
                "re-encoded",
                "|served - trainer|",
                "|sent - re-encoded|",
            ),
            rows,
        ),
    ]


def write_report(out: Path, summary: Mapping[str, Any], extra: Sequence[Block] = ()) -> Path:
    """``out/finetune/report.html`` (and its loss plot), ``extra`` blocks (a command's own
    sections) at its end; returns the page's path."""
    folder = out / REPORT_DIR
    training = summary["training"]
    loss_plot(folder / LOSS_PLOT, training["step_losses"], training["epoch_losses"], training["prior_floor"])
    path = folder / "report.html"
    path.write_text(render_html([*report_blocks(summary), *extra], "Fine-tuned judge"), encoding="utf-8")
    return path
