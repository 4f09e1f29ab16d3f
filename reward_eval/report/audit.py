"""What a person reads of a judge audit: its section, its own report, filmstrips, terminal lines.

The same blocks (:mod:`.document`) make the audit's own report (``audit/report.md`` and
``report.html``) and the audit section of a run's report, so both say the same thing; only
the images' relative paths differ. Every number comes from
:func:`..analysis.audit.summarize_audit`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from reward_eval.analysis.audit import ORIGINAL
from reward_eval.analysis.judges import judge_text, mixed_warning
from reward_eval.analysis.perturbations import FAILURE, describe
from reward_eval.report.document import (
    Alert,
    Block,
    Heading,
    Image,
    Items,
    Link,
    Para,
    Table,
    render_html,
    render_markdown,
)
from reward_eval.report.plots import save_figure
from reward_eval.report.provenance import RANDOM_MODEL_WARNING
from reward_eval.report.table import num, pct
from vlm_reward.frames import evenly_spaced

AUDIT_DIR = "audit"  # where an audit of a run dir goes by default: RUN_DIR/audit
AUDIT_FILE = "audit.json"
STRIP_FRAMES = 8  # frames of each row of a filmstrip (evenly subsampled)
ROW_TEXT = {
    ORIGINAL: "the native successes judged again (true-positive rate, for comparison)",
    FAILURE: "the native failures judged again (the reference false-positive rate)",
}


def row_text(name: str) -> str:
    """What a row of the audit table is: the perturbation's own docstring line, or the two rows'."""
    return ROW_TEXT.get(name) or describe(name)


def row_cells(name: str, block: Mapping[str, Any], frames: bool = False) -> tuple[str, ...]:
    """The table cells of row ``name``: episodes, judged (fallbacks), judged success, mean score,
    mean drop (blank for the two rows that are no perturbation); with ``frames``, the mean per-frame
    VOC too."""
    mean_drop = block["mean_drop"]
    # round, then add 0.0: a rise smaller than the last digit shows as 0.000, not -0.000
    drop = num(None if mean_drop is None else round(mean_drop, 3) + 0.0)
    drop = "" if name in (ORIGINAL, FAILURE) else drop
    judged = f"{block['judged']}" + (f" ({block['fallbacks']} fallback)" if block["fallbacks"] else "")
    cells = (str(block["episodes"]), judged, pct(block["positive_rate"]), num(block["mean_score"]), drop)
    return (*cells, num(block.get("mean_frame_voc"))) if frames else cells


HEADERS = ("episodes", "judged", "judged success", "mean score", "mean drop")
FRAME_HEADER = "mean per-frame VOC"  # a judge with frame scores: does the score rise frame by frame?
FRAME_NOTE = (
    f"The judge scored each frame: {FRAME_HEADER} is the Spearman correlation of a case's frame scores "
    "with the frames' order, averaged over the row (+1: the score rises with every frame). A progress "
    "judge reads a reversed success as progress undone (near -1) that ends where it started."
)


def has_frame_vocs(summary: Mapping[str, Any]) -> bool:
    """Whether any row has a per-frame VOC (the judge answered frame scores)."""
    return any(b.get("mean_frame_voc") is not None for b in summary["rows"].values())


def _tables(summary: Mapping[str, Any]) -> list[Block]:
    frames = has_frame_vocs(summary)
    headers = (*HEADERS, FRAME_HEADER) if frames else HEADERS
    rows = tuple((name, row_text(name), *row_cells(name, b, frames)) for name, b in summary["rows"].items())
    per_task = tuple(
        (key, task["task_text"], name, *row_cells(name, b, frames))
        for key, task in summary["per_task"].items()
        for name, b in task["rows"].items()
        if b["episodes"]
    )
    return [
        Table(("episodes judged as", "what they are", *headers), rows),
        Para("Per task:"),
        Table(("task", "task text", "row", *headers), per_task),
    ]


def _worst_blocks(summary: Mapping[str, Any], image_prefix: str) -> list[Block]:
    blocks: list[Block] = [Heading("Worst cases", 3)]
    for name, cases in summary["worst"].items():
        for case in cases:
            label = f"{name}: task {case['task_id']}, {case['log']}:{case['record']}"
            drop = "" if case.get("original_score") is None else f", original {num(case['original_score'])}"
            blocks.append(
                Para(f"{label}: score {num(case['score'])}{drop}; judged as: {case['judged_task_text']}")
            )
            if case.get("strip"):
                blocks.append(Image(f"{image_prefix}{case['strip']}", f"original and {name} of {label}"))
    return blocks if len(blocks) > 1 else []


def audit_blocks(audit: Mapping[str, Any], image_prefix: str = "") -> list[Block]:
    """The audit's blocks; an image's path is ``image_prefix`` + its path in the audit dir."""
    if audit.get("skipped"):
        return [Heading("Judge audit: counterfactual episodes"), Para(f"No audit: {audit['skipped']}")]
    threshold = audit["threshold"]
    blocks: list[Block] = [
        Heading("Judge audit: counterfactual episodes"),
        Para(
            "Episodes a policy could learn to produce instead of a success, built from the kept videos "
            "and judged by the same judge. Every row but the first should be judged a failure: its "
            f"'judged success' column is the judge's false-positive rate at threshold {threshold:g} (score "
            f">= threshold). Mean drop: the episode's own score minus the counterfactual's. "
            f"{audit['calls']} calls, {audit['fallback_calls']} fallback(s), left out."
        ),
    ]
    if has_frame_vocs(audit):
        blocks.append(Para(FRAME_NOTE))
    judges = audit.get("judges") or []
    if judges:  # audits older than the judge's identity have none
        blocks.append(Para(f"Judged by: {judge_text(judges)}."))
    if (warning := mixed_warning(judges)) is not None:
        blocks.append(Alert(warning))
    blocks += _tables(audit)
    if audit.get("unreadable"):
        items = tuple(f"{u['log']}:{u['record']}: {u['error']}" for u in audit["unreadable"])
        blocks += [Para("Episodes left out, their video could not be read:"), Items(items)]
    return blocks + _worst_blocks(audit, image_prefix)


def audit_section(run_dir: Path, summary: Mapping[str, Any]) -> tuple[list[Block], dict[str, Path]]:
    """The run report's audit section (``summary["audit"]``, written by the audit into
    ``<run_dir>/<audit dir>``); its figures are the audit's own strips."""
    audit = summary["audit"]
    prefix = f"{audit['dir']}/" if audit.get("dir") else ""
    blocks = audit_blocks(audit, prefix)
    if prefix and not audit.get("skipped"):
        link = Link(
            f"{prefix}report.html",
            f"The audit's own report ({prefix}report.html, numbers in {prefix}audit.json)",
        )
        blocks.insert(1, link)
    return blocks, {}


def audit_lines(audit: Mapping[str, Any]) -> list[str]:
    """The terminal lines: each row's judged-success rate."""
    if audit.get("skipped"):
        return [f"audit: none ({audit['skipped']})"]
    cells = [f"{name} {pct(b['positive_rate'])} of {b['judged']}" for name, b in audit["rows"].items()]
    took = f", {audit['calls']} calls in {audit['wall_s']:.1f} s" if audit.get("wall_s") is not None else ""
    lines = [f"audit (judged success at {audit['threshold']:g}{took}): " + ", ".join(cells)]
    if audit.get("judges"):
        lines.append(f"audit judged by: {judge_text(audit['judges'])}")
    return lines


def _strip_row(axes: Any, frames: np.ndarray, label: str) -> None:
    picks = evenly_spaced(len(frames), STRIP_FRAMES)
    for i, ax in enumerate(axes):
        ax.set_axis_off()
        if i < len(picks):
            ax.imshow(frames[picks[i]])
            ax.set_title(f"{label} {picks[i] + 1}/{len(frames)}", fontsize=7)


def pair_strip(path: Path, original: np.ndarray, counterfactual: np.ndarray, title: str) -> Path:
    """The original's frames (top row) above the counterfactual's (bottom row), under ``title``."""
    fig = Figure(figsize=(1.7 * STRIP_FRAMES, 4.2), layout="constrained")
    axes = fig.subplots(2, STRIP_FRAMES, squeeze=False)
    _strip_row(axes[0], original, "original")
    _strip_row(axes[1], counterfactual, "counterfactual")
    fig.suptitle(title, fontsize=8, ha="left", x=0.01)
    return save_figure(fig, path)


def write_audit_report(
    out: Path, audit: Mapping[str, Any], title: str, random_model: bool
) -> dict[str, Path]:
    """Write ``audit.json``, ``report.md`` and ``report.html`` of the audit into ``out``."""
    paths = {"audit": out / AUDIT_FILE, "markdown": out / "report.md", "html": out / "report.html"}
    text = json.dumps(audit, indent=2, allow_nan=False, default=str)
    paths["audit"].write_text(text + "\n", encoding="utf-8")
    blocks: list[Block] = [Heading(title, 1)]
    if random_model:
        blocks.append(Alert(RANDOM_MODEL_WARNING))
    blocks += audit_blocks(audit)
    paths["markdown"].write_text(render_markdown(blocks), encoding="utf-8")
    paths["html"].write_text(render_html(blocks, title), encoding="utf-8")
    return paths
