"""Two or more judges of the same episodes, one row each: what the main job prints last.

    python -m reward_eval.report.side_by_side RUN_DIR RUN_DIR [...]

Each run dir is a ``run`` or a ``rescore`` of the same episodes (its ``summary.json``), audited
(``RUN_DIR/audit/audit.json``: ``run`` audits its own, ``audit`` writes one). A row: the judge
(its identity, from the records), the episodes, the judge's success rate, its agreement with the
simulator, AUROC, the verdict on the episodes (does every native success score above every
native failure?) and the audit's judged-success rate per row (``original``: the successes,
every other row: episodes that must be judged failures).

When a run dir measured progress (``rescore --prefixes``, or a judge's per-frame scores:
:mod:`..analysis.frame_progress`), every row also gets the progress measures, ``-`` where its
judge has none: the prefix VOC of the native successes and failures (the one every judge shares: a
judge whose score grows with the video's length has a high VOC on both), the Pearson of
the frame scores with the simulator's goal fraction, the per-frame VOC of the successes, and how
many successes end above the failures' median end score (every judge has it).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reward_eval.analysis.judges import judge_text
from reward_eval.report.audit import AUDIT_DIR, AUDIT_FILE
from reward_eval.report.table import num, pct
from vlm_reward.client.episode_log import EPISODE_LOG_GLOB, read_episode_log

SUMMARY_FILE = "summary.json"
OUTCOMES = ("success", "failure")


def separates(run_dir: Path) -> bool | None:
    """Whether every judged native success scored above every judged native failure (``None``
    without both)."""
    records = [r for log in sorted(run_dir.glob(EPISODE_LOG_GLOB)) for r in read_episode_log(log)]
    judged = [r for r in records if not r.fallback]
    successes = [r.vlm_score for r in judged if r.native_success]
    failures = [r.vlm_score for r in judged if not r.native_success]
    if not successes or not failures:
        return None
    return min(successes) > max(failures)


def audit_of(run_dir: Path) -> Mapping[str, Any] | None:
    """The run dir's audit summary, or ``None`` when it was not audited."""
    path = run_dir / AUDIT_DIR / AUDIT_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def verdict(split: bool | None) -> str:
    return {True: "separates", False: "does not separate", None: "n/a (one class)"}[split]


def progress_cells(run_dir: Path, summary: Mapping[str, Any]) -> dict[str, str]:
    """The progress measures of one judge (see the module docstring); ``-`` where it has none."""
    from reward_eval.analysis.frame_progress import ends_above_failures
    from reward_eval.report.frame_progress import ends_cell, pearson_cell, voc_cell

    prefixes = summary.get("progress")
    frames = (summary.get("frame_progress") or {}).get("overall")
    records = [r for log in sorted(run_dir.glob(EPISODE_LOG_GLOB)) for r in read_episode_log(log)]
    ends = [[r.vlm_score for r in records if not r.fallback and r.native_success is o] for o in (True, False)]
    vocs = {key: prefixes["overall"][f"native_{key}"]["mean_voc"] if prefixes else None for key in OUTCOMES}
    return {
        # both outcomes: a judge whose score rises with the video's length rises on failures too
        **{f"prefix VOC | {key}": "-" if prefixes is None else num(vocs[key]) for key in OUTCOMES},
        "Pearson (goal)": "-" if frames is None else pearson_cell(frames),
        "frame VOC | success": "-" if frames is None else voc_cell(frames),
        "ends above failures": ends_cell({"ends_above_failures": ends_above_failures(*ends)}),
    }


def measured_progress(run_dir: Path) -> bool:
    """Whether the run dir's summary has a progress measure (prefixes or frame scores)."""
    summary = json.loads((run_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
    return "progress" in summary or "frame_progress" in summary


def row(run_dir: Path, progress: bool = False) -> dict[str, str]:
    """One judge's cells (with ``progress``, its progress measures too)."""
    summary = json.loads((run_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
    overall = summary["overall"]
    audit = audit_of(run_dir)
    rows = {} if audit is None or audit.get("skipped") else audit["rows"]
    cells = {
        "judge": judge_text(summary.get("judges", [])),
        "n": str(overall["n_episodes"]),
        "VLM SR": pct(overall["vlm_success_rate"]),
        "agree": pct(overall["agreement"]),
        "AUROC": num(overall["auroc"]),
        "successes vs failures": verdict(separates(run_dir)),
    }
    cells.update({name: pct(block["positive_rate"]) for name, block in rows.items()})
    return {**cells, **(progress_cells(run_dir, summary) if progress else {})}


def table(run_dirs: Sequence[Path]) -> str:
    """The aligned table, one row per run dir, columns in first-seen order; the progress columns
    when any run dir measured progress."""
    progress = any(measured_progress(run_dir) for run_dir in run_dirs)
    rows = [row(run_dir, progress) for run_dir in run_dirs]
    header = list(dict.fromkeys(key for r in rows for key in r))
    cells = [header, *([r.get(key, "-") for key in header] for r in rows)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in cells]
    note = "audit columns: the share judged a success (original: native successes; the rest must be failures)"
    return "\n".join([note, *lines])


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table; exit 2 with one sentence when a run dir has no summary."""
    run_dirs = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    missing = [str(d) for d in run_dirs if not (d / SUMMARY_FILE).is_file()]
    if len(run_dirs) < 2 or missing:
        problem = f"{', '.join(missing)} holds no {SUMMARY_FILE}" if missing else "give two run dirs or more"
        print(
            f"usage: python -m reward_eval.report.side_by_side RUN_DIR RUN_DIR [...]: {problem}.",
            file=sys.stderr,
        )
        return 2
    print(table(run_dirs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
