"""What every evaluation command leaves in its run dir: ``settings.json`` and the report.

Shared by ``run`` and ``rescore`` so both write the same files the same way: a run dir
from either can be re-scored, compared or read by the same tools.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reward_eval.analysis.episode_log import episode_logs
from reward_eval.job.paths import REPO
from reward_eval.judging.endpoint import JUDGE_ERRORS
from vlm_reward.client.episode_record import EPISODE_LOG_GLOB


def run_command(execute: Callable[[argparse.Namespace], Any], args: argparse.Namespace) -> int:
    """Run a job command (``run``, ``rescore``) on parsed ``args``; returns the exit status.

    A reward server that cannot be started or reached (:data:`..judging.endpoint.JUDGE_ERRORS`) is the
    user's to fix, not a bug: it ends the command with its one-line message and status 1
    instead of a traceback. Every other exception propagates.
    """
    try:
        execute(args)
    except JUDGE_ERRORS as exc:
        print(f"[reward-eval] error: {exc}", file=sys.stderr)
        return 1
    return 0


def default_run_dir(prefix: str = "") -> Path:
    """``<repo>/runs/reward_eval/<prefix><timestamp>``: git-ignored, the same from any working dir."""
    return REPO / "runs" / "reward_eval" / f"{prefix}{time.strftime('%Y%m%d-%H%M%S')}"


def write_settings(run_dir: Path, settings: Mapping[str, Any]) -> Path:
    """Write ``settings.json`` (paths as strings) and return its path."""
    path = run_dir / "settings.json"
    path.write_text(json.dumps(settings, indent=2, default=str, allow_nan=False) + "\n", encoding="utf-8")
    return path


def plain_options(options: Mapping[str, Any], skip: Sequence[str] = ()) -> dict[str, Any]:
    """Parsed CLI options as JSON-friendly values (paths as strings), without ``skip``."""
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in options.items() if k not in skip}


def finish_report(
    run_dir: Path, settings: Mapping[str, Any], title: str, extra: Mapping[str, Any] | None = None
) -> dict[str, Path]:
    """Summarize the run's episode logs, write the report, print the table and the report's path.

    The summary gets the command lines that re-render this run's report at its best thresholds
    (:mod:`..report.threshold_hint`) and the sections in ``extra`` (``rescore --prefixes``: ``progress``;
    ``run``: ``audit``).
    Raises ``RuntimeError`` when the run dir has no episode log (nothing was scored).
    """
    from reward_eval.analysis.episode_log import load_episodes
    from reward_eval.analysis.metrics import summarize
    from reward_eval.report.audit import audit_lines
    from reward_eval.report.calibration import calibration_lines
    from reward_eval.report.evaluation import write_report
    from reward_eval.report.progress import progress_lines
    from reward_eval.report.table import format_table
    from reward_eval.report.threshold_hint import add_report_hints

    logs = episode_logs(run_dir)
    if not logs:
        raise RuntimeError(f"no episode was scored: no {EPISODE_LOG_GLOB} in {run_dir}.")
    records = [record for log in logs for record in load_episodes(log)]
    summary = summarize(records)
    add_report_hints(summary["calibration"], run_dir)
    summary.update(extra or {})
    paths = write_report(run_dir, records, summary, title=title, settings=settings)
    print(format_table(summary))
    audit = audit_lines(summary["audit"]) if "audit" in summary else []
    for line in calibration_lines(summary) + progress_lines(summary) + audit:
        print(f"[reward-eval] {line}")
    if settings.get("random_model"):
        print("[reward-eval] the judge is the tiny random-weight model: its scores are random.")
    print(f"[reward-eval] report: {paths['html']} (markdown: {paths['markdown']})")
    return paths
