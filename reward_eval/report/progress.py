"""The progress-order part of a ``rescore --prefixes K`` report: VOC per episode, task and outcome.

Every number comes from ``summary["progress"]``
(:func:`reward_eval.analysis.progress.summarize_progress`, with the
per-episode results under ``episodes``). An undefined VOC shows as ``n/a`` with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from reward_eval.report.document import Block, Heading, Image, Para, Table
from reward_eval.report.plots import FAILURE_COLOR, SUCCESS_COLOR, save_figure
from reward_eval.report.table import num

MAX_EPISODE_ROWS = 200  # per-episode rows in the report; voc_episodes.jsonl has them all


def _mean(stats: Mapping[str, Any]) -> str:
    """``mean (n_voc/n_episodes)``, or ``n/a`` with why when no episode of the group has a VOC."""
    if stats["n_episodes"] == 0:
        return "n/a (no episode)"
    if stats["mean_voc"] is None:
        return f"n/a (0/{stats['n_episodes']} with a VOC)"
    return f"{num(stats['mean_voc'])} ({stats['n_voc']}/{stats['n_episodes']})"


def _undefined(stats: Mapping[str, Any]) -> str:
    return "; ".join(f"{reason}: {count}" for reason, count in stats["undefined"].items()) or "-"


def _scope_row(label: str, text: str, groups: Mapping[str, Any]) -> tuple[str, ...]:
    means = (_mean(groups[k]) for k in ("native_success", "native_failure", "all"))
    return (label, text, *means, _undefined(groups["all"]))


def _episode_row(e: Mapping[str, Any]) -> tuple[str, ...]:
    scores = ", ".join("fallback" if s is None else f"{s:.3f}" for s in e["scores"]) or "-"
    value = num(e["voc"]) if e["voc"] is not None else f"n/a ({e['voc_undefined']})"
    trial = "" if e.get("trial_id") is None else str(e["trial_id"])
    outcome = "success" if e["native_success"] else "failure"
    frames = ", ".join(map(str, e["prefix_frames"])) or "-"
    return (f"{e['log']}:{e['record']}", str(e["task_id"]), trial, outcome, frames, scores, value)


def _explanation(prog: Mapping[str, Any]) -> str:
    return (
        f"Each kept video was judged again on its first 1/K, 2/K, ..., K/K frames (K = {prog['prefixes']}; "
        "repeated prefixes of a video shorter than K frames are judged once): "
        f"{prog['calls']} calls, {prog['fallback_calls']} of them failed (fallback) and are left out. "
        "The VOC of an episode is the Spearman rank correlation of the score with the prefix's length: "
        "+1 when the score rises with every prefix, -1 when it falls. A judge that reads progress gives "
        "successful episodes a high VOC. A VOC is undefined (n/a) with fewer than two judged prefixes or "
        "the same score at every prefix. Each mean is over the episodes with a VOC (n with a VOC / n). "
        f"Per-episode results: {prog['episodes_file']}."
    )


def progress_section(run_dir: Path, summary: Mapping[str, Any]) -> tuple[list[Block], dict[str, Path]]:
    """The report's blocks on ``summary["progress"]`` and its figure (``progress_curves``)."""
    prog = summary["progress"]
    rows = [_scope_row("overall", "", prog["overall"])]
    rows += [_scope_row(k, t["task_text"], t) for k, t in prog["per_task"].items()]
    headers = ("scope", "task text", "mean VOC | native success", "mean VOC | native failure")
    blocks: list[Block] = [
        Heading("Progress order (VOC)"),
        Para(_explanation(prog)),
        Table((*headers, "mean VOC | all", "VOC n/a, why"), tuple(rows)),
    ]
    episodes = prog.get("episodes") or []
    if episodes:
        shown = tuple(_episode_row(e) for e in episodes[:MAX_EPISODE_ROWS])
        head = ("episode (log:record)", "task", "trial", "native", "prefix frames", "scores", "VOC")
        blocks += [Para("Per episode:"), Table(head, shown)]
        if len(episodes) > MAX_EPISODE_ROWS:
            blocks.append(
                Para(f"{len(episodes) - MAX_EPISODE_ROWS} more episode(s) in {prog['episodes_file']}.")
            )
        figure = progress_plot(run_dir / "plots" / "progress_curves.png", episodes, prog["prefixes"])
        blocks += [
            Para("Score of each prefix, one line per episode:"),
            Image(figure.relative_to(run_dir).as_posix(), "score per prefix"),
        ]
        return blocks, {"progress_curves": figure}
    return blocks, {}


def progress_plot(path: Path, episodes: list[Mapping[str, Any]], k: int) -> Path:
    """Score against the fraction of the kept video each prefix holds, coloured by native outcome."""
    fig = Figure(figsize=(7, 4.2), layout="constrained")
    ax = fig.add_subplot()
    for e in episodes:
        points = [(n, s) for n, s in zip(e["prefix_frames"], e["scores"], strict=True) if s is not None]
        if not points:
            continue
        total = max(e["prefix_frames"])
        color = SUCCESS_COLOR if e["native_success"] else FAILURE_COLOR
        ax.plot([n / total for n, _ in points], [s for _, s in points], "o-", color=color, alpha=0.6)
    handles = [
        Line2D([], [], color=SUCCESS_COLOR, marker="o"),
        Line2D([], [], color=FAILURE_COLOR, marker="o"),
    ]
    ax.legend(
        handles, ["native success", "native failure"], fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1)
    )
    ax.set_xlim(0, 1.05)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("fraction of the kept video's frames in the prefix")
    ax.set_ylabel("score")
    ax.set_title(f"Score of each prefix (K = {k})")
    return save_figure(fig, path)


def progress_lines(summary: Mapping[str, Any]) -> list[str]:
    """The terminal line after the table: mean VOC by native outcome, the calls and fallbacks."""
    prog = summary.get("progress")
    if not prog:
        return []
    means = ", ".join(
        f"{name} {_mean(prog['overall'][key])}"
        for name, key in (("native success", "native_success"), ("native failure", "native_failure"))
    )
    return [
        f"progress order (--prefixes {prog['prefixes']}, {prog['calls']} calls, {prog['fallback_calls']} "
        f"fallbacks): mean VOC {means}"
    ]
