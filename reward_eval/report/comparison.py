"""The comparison of training runs: ``compare.png`` and the Markdown table of ``compare.md``.

Draws and formats the :class:`~..analysis.training_runs.RunCurves` of a native-reward and a
VLM-reward run, or of any number of runs: native success of each over training steps, then one
agreement panel per x unit (training steps for scalars, judged episodes for episode-log windows),
then, for each run that logged the judge's live health, its false-positive curves over the same
steps as native success (overall, per task, canaries; false negatives dotted; the guard's trip
marked); the table has the final and best native success of each run, its mean agreement, the final
false-positive and false-negative rates and when the guard tripped.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from reward_eval.analysis.judges import judge_text, mixed_warning
from reward_eval.analysis.training_runs import STEP_UNIT, HealthCurves, RunCurves

# native run, VLM run (a pair), then more runs; a run past the list wraps around
COLORS = ("#264653", "#e76f51", "#2a9d8f", "#8e44ad", "#e9c46a", "#6c757d")
GUARD_COLOR = "#d62828"


def plot(runs: Sequence[RunCurves], native_tag: str, path: Path) -> Path:
    """Native success of every run over steps, one agreement panel per x unit, one health panel
    per run that logged it."""
    units = list(dict.fromkeys(r.agreement.unit for r in runs if r.agreement is not None))
    colored = [(run, COLORS[i % len(COLORS)]) for i, run in enumerate(runs)]
    watched = [(run, color) for run, color in colored if run.health is not None]
    panels = 1 + len(units) + len(watched)
    fig = Figure(figsize=(8, 3.2 * panels))
    axes = fig.subplots(panels, 1, squeeze=False)[:, 0]
    for run, color in colored:
        axes[0].plot(run.native.x, run.native.y, color=color, marker=".", label=run.label)
        for ax, unit in zip(axes[1 : 1 + len(units)], units, strict=True):
            if run.agreement is not None and run.agreement.unit == unit:
                ax.plot(run.agreement.x, run.agreement.y, color=color, marker=".", label=run.label)
    axes[0].set(title=f"Native success ({native_tag})", xlabel=STEP_UNIT, ylabel="success rate")
    for ax, unit in zip(axes[1 : 1 + len(units)], units, strict=True):
        ax.set(title="VLM / native agreement", xlabel=unit, ylabel="agreement")
    for ax, (run, color) in zip(axes[1 + len(units) :], watched, strict=True):
        _draw_health(ax, run.label, run.health, color)
    for ax in axes:
        ax.set_ylim(-0.02, 1.02)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps and episodes are counts
        ax.grid(alpha=0.3)
        ax.legend(loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, facecolor="white")
    return path


def _draw_health(ax: Any, label: str, health: HealthCurves, color: str) -> None:
    """One run's false-positive curves: overall (thick), per task (thin), canaries, false negatives."""
    fp = health.false_positive
    ax.plot(fp.x, fp.y, color=color, marker=".", linewidth=2.2, label="false-positive rate")
    for task, series in health.per_task.items():
        ax.plot(series.x, series.y, linewidth=0.9, alpha=0.8, label=f"task {task}")
    if health.canary_false_positive is not None:
        canary = health.canary_false_positive
        ax.plot(canary.x, canary.y, color="black", linestyle="-.", label="canary false-positive rate")
    if health.false_negative is not None:
        fn = health.false_negative
        ax.plot(fn.x, fn.y, color=color, linestyle=":", label="false-negative rate")
    if health.guard_tripped_at is not None:
        ax.axvline(health.guard_tripped_at, color=GUARD_COLOR, linestyle="--", label="guard tripped")
    ax.set(title=f"The judge's live false positives: {label}", xlabel=STEP_UNIT, ylabel="rate")


def _health_cells(health: HealthCurves | None) -> tuple[str, str]:
    """(final false-positive / false-negative rates, the guard) for the table."""
    if health is None:
        return "n/a (not logged)", "n/a"
    fp = health.false_positive
    fn = "n/a" if health.false_negative is None else f"{float(health.false_negative.y[-1]):.3f}"
    rates = f"{float(fp.y[-1]):.3f} / {fn} (step {int(fp.x[-1])})"
    guard = "not tripped" if health.guard_tripped_at is None else f"tripped at step {health.guard_tripped_at}"
    return rates, guard


def table_rows(runs: Sequence[RunCurves]) -> list[tuple[str, ...]]:
    """One row per run: final and best native success (with their steps), mean agreement."""
    rows = []
    for run in runs:
        final_step, final = int(run.native.x[-1]), float(run.native.y[-1])
        best_i = int(np.argmax(run.native.y))
        best_step, best = int(run.native.x[best_i]), float(run.native.y[best_i])
        if run.agreement is None:
            agree = "n/a (no scored episodes)"
        else:
            agree = f"{float(np.mean(run.agreement.y)):.3f} ({run.agreement.source})"
        judged_by = judge_text(run.judges) if run.judges else "n/a (no scored episodes)"
        rows.append(
            (
                run.label,
                str(run.log_dir),
                f"{final:.3f} (step {final_step})",
                f"{best:.3f} (step {best_step})",
                agree,
                *_health_cells(run.health),
                judged_by,
            )
        )
    return rows


def markdown(runs: Sequence[RunCurves], native_tag: str, png: Path) -> str:
    """The short comparison in Markdown: the table and the figure."""
    header = ("run", "log dir", f"final {native_tag}", f"best {native_tag}", "mean VLM/native agreement")
    header += ("final judge false-positive / false-negative rate", "reward guard", "judged by")
    lines = [
        "# Native vs VLM reward: training runs",
        "",
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
    ]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in table_rows(runs)]
    warnings = [(run.label, mixed_warning(run.judges)) for run in runs]
    lines += [f"\n**{label}:** {warning}" for label, warning in warnings if warning is not None]
    lines += ["", f"![native success and agreement]({png.name})", ""]
    return "\n".join(lines)
