"""The calibration part of the report: ROC curve, best thresholds, Brier score, reliability.

Every number comes from ``summary["calibration"]``
(:func:`reward_eval.analysis.calibration.calibration`, with the
``report_at_*`` command lines :mod:`.threshold_hint` adds). A value that is
undefined shows as ``n/a`` followed by the reason the summary gives. Figures are drawn on
matplotlib's Agg canvas as in :mod:`.plots`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from reward_eval.report.document import Block, Heading, Image, Items, Para, Table
from reward_eval.report.plots import (
    AGREE_COLOR,
    FAILURE_COLOR,
    SUCCESS_COLOR,
    save_figure,
)
from reward_eval.report.table import num, pct


def threshold_text(value: float) -> str:
    """A threshold as the report prints it (6 significant digits; the command line has it exactly)."""
    return f"{value:.6g}"


def _value(cal: Mapping[str, Any], key: str, text: str | None = None) -> str:
    """``text`` (default: the number), or ``n/a (reason)`` when ``cal[key]`` is undefined."""
    if cal.get(key) is None:
        return f"n/a ({cal['undefined'].get(key, 'undefined')})"
    return text if text is not None else num(cal[key])


def _rows(cal: Mapping[str, Any], summary: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    f1, youden = cal.get("best_f1"), cal.get("best_youden")
    f1_text = youden_text = None
    if f1 is not None:
        f1_text = (
            f"{threshold_text(f1['threshold'])}: F1 {num(f1['f1'])}, precision {num(f1['precision'])}, "
            f"recall {num(f1['recall'])}"
        )
    if youden is not None:
        youden_text = (
            f"{threshold_text(youden['threshold'])}: J {num(youden['j'])}, TPR {num(youden['tpr'])}, "
            f"FPR {num(youden['fpr'])}"
        )
    overall = summary["overall"]
    return (
        (
            "judged episodes (native successes / failures)",
            f"{cal['n']} ({cal['n_success']} / {cal['n_failure']})",
        ),
        ("AUROC (area under the ROC curve)", _value(cal, "auroc")),
        ("Brier score: mean (score - native)^2", _value(cal, "brier")),
        (f"ECE over {len(cal['reliability'])} score bins", _value(cal, "ece")),
        (f"threshold in use {threshold_text(summary['threshold'])}", f"F1 {num(overall['f1'])}"),
        ("threshold of the best F1", _value(cal, "best_f1", f1_text)),
        ("threshold of the best Youden's J = TPR - FPR", _value(cal, "best_youden", youden_text)),
    )


def _reliability_table(cal: Mapping[str, Any]) -> Table:
    rows = tuple(
        (
            f"[{b['bin_lo']:.1f}, {b['bin_hi']:.1f}{']' if b['bin_hi'] >= 1 else ')'}",
            str(b["count"]),
            num(b["mean_score"]),
            pct(b["native_rate"]),
        )
        for b in cal["reliability"]
        if b["count"]
    )
    return Table(("score bin", "episodes", "mean score", "native success rate"), rows)


def _command_blocks(cal: Mapping[str, Any]) -> list[Block]:
    """The ``report`` command lines at the best thresholds, when the summary has them."""
    commands = [
        f"at the best {name}: {cal[key]}"
        for name, key in (("F1", "report_at_best_f1"), ("Youden's J", "report_at_best_youden"))
        if cal.get(key)
    ]
    if not commands:
        return []
    return [
        Para("The full report at one of these thresholds (from the stored scores, no judge call):"),
        Items(tuple(commands)),
    ]


def calibration_section(run_dir: Path, summary: Mapping[str, Any]) -> tuple[list[Block], dict[str, Path]]:
    """The report's blocks on ``summary["calibration"]`` and its figures (``roc`` when both
    classes were judged, ``reliability`` when any episode was)."""
    cal = summary["calibration"]
    blocks: list[Block] = [
        Heading("Calibration and thresholds"),
        Para(
            "How the continuous score of the judged episodes separates and predicts the native outcome, "
            "whatever the threshold. A threshold t predicts success for score >= t; the candidates are the "
            "observed scores, and among equal F1 or J the largest threshold is chosen (it rewards fewest "
            "episodes). Both best thresholds are picked on these same episodes: an in-sample, optimistic "
            "estimate to confirm on other episodes."
        ),
        Table(("metric", "value"), _rows(cal, summary)),
    ]
    blocks += _command_blocks(cal)
    figures: dict[str, Path] = {}
    folder = run_dir / "plots"
    if cal.get("roc") is not None:
        figures["roc"] = roc_plot(folder / "roc.png", cal, summary)
        blocks += [
            Para("ROC curve of the score:"),
            Image(figures["roc"].relative_to(run_dir).as_posix(), "ROC curve"),
        ]
    if cal["n"]:
        figures["reliability"] = reliability_plot(folder / "reliability.png", cal)
        blocks += [
            Para(
                "Reliability: the native success rate of the judged episodes in each score bin against their "
                "mean score; a calibrated score lies on the diagonal."
            ),
            _reliability_table(cal),
            Image(figures["reliability"].relative_to(run_dir).as_posix(), "reliability diagram"),
        ]
    return blocks, figures


def roc_plot(path: Path, cal: Mapping[str, Any], summary: Mapping[str, Any]) -> Path:
    """The ROC curve from (0, 0), the chance diagonal, and the in-use and best thresholds marked."""
    fig = Figure(figsize=(5.5, 5), layout="constrained")
    ax = fig.add_subplot()
    fpr = [0.0] + [p[0] for p in cal["roc"]]
    tpr = [0.0] + [p[1] for p in cal["roc"]]
    ax.plot(fpr, tpr, color=AGREE_COLOR, marker="o", markersize=3, label=f"score (AUROC {num(cal['auroc'])})")
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1, label="chance")
    overall = summary["overall"]
    if overall["recall"] is not None and overall["specificity"] is not None:
        ax.plot(
            1 - overall["specificity"],
            overall["recall"],
            "s",
            color="black",
            label=f"in use, t = {threshold_text(summary['threshold'])}",
        )
    for key, marker, color, name in (
        ("best_f1", "^", SUCCESS_COLOR, "best F1"),
        ("best_youden", "v", FAILURE_COLOR, "best Youden's J"),
    ):
        best = cal.get(key)
        if best is not None:
            point = next(p for p in cal["roc"] if p[2] == best["threshold"])
            ax.plot(
                point[0],
                point[1],
                marker,
                color=color,
                markersize=9,
                label=f"{name}, t = {threshold_text(best['threshold'])}",
            )
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("false positive rate (native failures judged success)")
    ax.set_ylabel("true positive rate (native successes judged success)")
    ax.set_title("ROC of the score against native success")
    ax.legend(fontsize=8, loc="lower right")
    return save_figure(fig, path)


def reliability_plot(path: Path, cal: Mapping[str, Any]) -> Path:
    """Native success rate against mean score per non-empty bin (above), episodes per bin (below)."""
    bins = [b for b in cal["reliability"] if b["count"]]
    fig = Figure(figsize=(5.5, 6), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    top.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1, label="calibrated")
    top.plot(
        [b["mean_score"] for b in bins],
        [b["native_rate"] for b in bins],
        "o-",
        color=AGREE_COLOR,
        label=f"judged episodes (Brier {num(cal['brier'])}, ECE {num(cal['ece'])})",
    )
    top.set_ylim(-0.02, 1.02)
    top.set_ylabel("native success rate")
    top.set_title("Reliability of the score")
    top.legend(fontsize=8, loc="best")
    width = cal["reliability"][0]["bin_hi"] - cal["reliability"][0]["bin_lo"]
    bottom.bar(
        [b["bin_lo"] for b in bins],
        [b["count"] for b in bins],
        width=width,
        align="edge",
        color=AGREE_COLOR,
        edgecolor="white",
    )
    bottom.set_xlim(0, 1)
    bottom.set_xlabel("score")
    bottom.set_ylabel("episodes")
    return save_figure(fig, path)


def calibration_lines(summary: Mapping[str, Any]) -> list[str]:
    """The terminal lines after the table: the best thresholds and the command that reports at one."""
    cal = summary.get("calibration")
    if not cal:
        return []
    lines = [f"calibration: AUROC {_value(cal, 'auroc')}, Brier {_value(cal, 'brier')}"]
    for name, key in (("F1", "best_f1"), ("Youden's J", "best_youden")):
        best = cal.get(key)
        if best is None:
            lines.append(f"best {name}: {_value(cal, key)}")
            continue
        metric = best["f1"] if key == "best_f1" else best["j"]
        command = cal.get(f"report_at_{key}")
        text = f"best {name} {num(metric)} at threshold {threshold_text(best['threshold'])}"
        lines.append(f"{text}; report at it: {command}" if command else text)
    return lines
