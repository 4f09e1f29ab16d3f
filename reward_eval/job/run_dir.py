"""What every evaluation command leaves in its run dir: the report, and the exit status.

Shared by ``run``, ``rescore`` and ``report`` so all write the same files the same way: a run
dir from any can be re-scored, compared or read by the same tools (``settings.json`` is
:class:`..job.settings.RunSettings`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from reward_eval.analysis.episode_log import episode_logs
from reward_eval.exit_statuses import EXIT_JUDGE_UNAVAILABLE
from reward_eval.job.paths import REPO
from reward_eval.job.settings import RunSettings
from reward_eval.judge.endpoint import JUDGE_ERRORS
from vlm_reward.client.episode_log import EPISODE_LOG_GLOB, read_episode_log
from vlm_reward.exit_statuses import EXIT_OK


def run_command(execute: Callable[[argparse.Namespace], Any], args: argparse.Namespace) -> int:
    """Run a job command (``run``, ``rescore``) on parsed ``args``; returns the exit status.

    A reward server that cannot be started or reached, or that refuses the key (a 401;
    :data:`..judge.endpoint.JUDGE_ERRORS`), is the user's to fix, not a bug: it ends the
    command with its one-line message and status 1 instead of a traceback. Every other
    exception propagates.
    """
    try:
        execute(args)
    except JUDGE_ERRORS as exc:
        print(f"[reward-eval] error: {exc}", file=sys.stderr)
        return EXIT_JUDGE_UNAVAILABLE
    return EXIT_OK


def default_run_dir(prefix: str = "") -> Path:
    """``<repo>/runs/reward_eval/<prefix><timestamp>``: git-ignored, the same from any working dir."""
    return REPO / "runs" / "reward_eval" / f"{prefix}{time.strftime('%Y%m%d-%H%M%S')}"


def finish_report(
    run_dir: Path, settings: RunSettings, subject: str, extra: Mapping[str, Any] | None = None
) -> dict[str, Path]:
    """Summarize the run's episode logs, write the report, print the table and the report's path.

    The report's title names the judge as what it is (its backend's kind, as the records name the
    backend) against the simulator, then ``subject`` (what was judged).

    The summary gets the command lines that re-render this run's report at its best thresholds
    (:mod:`..report.threshold_hint`), ``trained_on`` when a classifier judged episodes on its own
    training states (:mod:`.trained_on`, said on the terminal too),
    ``frame_progress`` when the judge answered per-frame scores (:mod:`..analysis.frame_progress`)
    and the sections in ``extra`` (``rescore --prefixes``: ``progress``; ``run``: ``audit``).
    Raises ``RuntimeError`` when the run dir has no episode log (nothing was scored).
    """
    from reward_eval.analysis.frame_progress import summarize_frame_progress
    from reward_eval.analysis.judges import backend_of, evaluation_title, judge_text, mixed_warning
    from reward_eval.analysis.metrics import summarize
    from reward_eval.job.trained_on import trained_on_block
    from reward_eval.report.audit import audit_lines
    from reward_eval.report.calibration import calibration_lines
    from reward_eval.report.evaluation import write_report
    from reward_eval.report.frame_progress import frame_progress_lines
    from reward_eval.report.progress import progress_lines
    from reward_eval.report.table import format_table
    from reward_eval.report.threshold_hint import add_report_hints
    from reward_eval.report.trained_on import trained_on_line

    logs = episode_logs(run_dir)
    if not logs:
        raise RuntimeError(f"no episode was scored: no {EPISODE_LOG_GLOB} in {run_dir}.")
    records = [record for log in logs for record in read_episode_log(log)]
    summary = summarize(records)
    if (trained := trained_on_block(records, settings)) is not None:
        summary["trained_on"] = trained
    add_report_hints(summary["calibration"], run_dir)
    if (frames := summarize_frame_progress(records)) is not None:
        summary["frame_progress"] = frames
    summary.update(extra or {})
    title = evaluation_title(backend_of(records, settings.backend), subject)
    paths = write_report(run_dir, records, summary, title=title, settings=settings.to_json())
    print(format_table(summary))
    if trained is not None:
        print(f"[reward-eval] {trained_on_line(trained, len(records))}")
    print(f"[reward-eval] judged by: {judge_text(summary['judges'])}")
    if (warning := mixed_warning(summary["judges"])) is not None:
        print(f"[reward-eval] warning: {warning}")
    audit = audit_lines(summary["audit"]) if "audit" in summary else []
    for line in calibration_lines(summary) + progress_lines(summary) + frame_progress_lines(summary) + audit:
        print(f"[reward-eval] {line}")
    if settings.random_model:
        print("[reward-eval] the judge is the tiny random-weight model: its scores are random.")
    print(f"[reward-eval] report: {paths['html']} (markdown: {paths['markdown']})")
    return paths
