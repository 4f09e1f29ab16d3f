"""The frame-by-frame part of a report: a progress judge's measures, per task and overall.

Every number comes from ``summary["frame_progress"]``
(:func:`reward_eval.analysis.frame_progress.summarize_frame_progress`), present when the judge
answered per-frame scores (a frame classifier); an undefined measure shows as ``n/a`` with why.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reward_eval.analysis.frame_progress import GOAL_FRACTION
from reward_eval.report.document import Block, Heading, Para, Table
from reward_eval.report.table import num

HEADERS = (
    "scope",
    "task text",
    f"Pearson with {GOAL_FRACTION} (frames)",
    "per-frame VOC | native success",
    "successes ending above the failures' median",
)


def pearson_cell(block: Mapping[str, Any]) -> str:
    """``r (frames)``, or ``n/a`` with why."""
    if block["pearson_frames"] == 0:
        return f"n/a (no frame with a {GOAL_FRACTION})"
    value = block["pearson_goal_fraction"]
    return f"{num(value)} ({block['pearson_frames']})" if value is not None else "n/a (a constant side)"


def voc_cell(block: Mapping[str, Any]) -> str:
    """``mean (n with a VOC / successes with frame scores)``, or ``n/a`` with why."""
    voc = block["frame_voc_successes"]
    if voc["n_episodes"] == 0:
        return "n/a (no native success with frame scores)"
    if voc["mean"] is None:
        reasons = "; ".join(f"{why}: {n}" for why, n in voc["undefined"].items())
        return f"n/a ({reasons})"
    return f"{num(voc['mean'])} ({voc['n_voc']}/{voc['n_episodes']})"


def ends_cell(block: Mapping[str, Any]) -> str:
    """``above/successes (failures' median m)``, or ``n/a`` with why."""
    ends = block["ends_above_failures"]
    if ends["share"] is None:
        return "n/a (needs a native success and a native failure)"
    return f"{ends['above']}/{ends['successes']} (median {num(ends['failure_median'])})"


def _row(label: str, text: str, block: Mapping[str, Any]) -> tuple[str, ...]:
    return (label, text, pearson_cell(block), voc_cell(block), ends_cell(block))


def _explanation(overall: Mapping[str, Any]) -> str:
    return (
        f"The judge scored each frame it was shown ({overall['with_frame_scores']} of the "
        f"{overall['episodes']} judged episodes carry frame scores). Pearson: the correlation of every "
        f"frame score with the simulator's {GOAL_FRACTION} at that frame (the share of the task's goal "
        "predicates that hold), over all frames of the episodes that record it (a labelled set's). "
        "Per-frame VOC: the Spearman correlation of a native success's frame scores with the frames' "
        "order, +1 when the score rises with every frame, averaged over the successes (n with a VOC / "
        "n). The last column: the native successes whose episode score is strictly above the median "
        "episode score of the native failures."
    )


def frame_progress_section(run_dir: Path, summary: Mapping[str, Any]) -> tuple[list[Block], dict[str, Path]]:
    """The report's blocks on ``summary["frame_progress"]`` (no figure)."""
    frames = summary["frame_progress"]
    rows = [_row("overall", "", frames["overall"])]
    rows += [_row(key, block["task_text"], block) for key, block in frames["per_task"].items()]
    blocks: list[Block] = [
        Heading("Progress, frame by frame"),
        Para(_explanation(frames["overall"])),
        Table(HEADERS, tuple(rows)),
    ]
    return blocks, {}


def frame_progress_lines(summary: Mapping[str, Any]) -> list[str]:
    """The terminal line: the three measures, overall."""
    frames = summary.get("frame_progress")
    if not frames:
        return []
    overall = frames["overall"]
    return [
        f"progress frame by frame: Pearson with {GOAL_FRACTION} {pearson_cell(overall)}, per-frame VOC of "
        f"the native successes {voc_cell(overall)}, successes ending above the failures' median "
        f"{ends_cell(overall)}"
    ]
