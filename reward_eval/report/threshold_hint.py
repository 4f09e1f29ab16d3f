"""The command line that re-renders a run's report at another threshold, for the report to print.

The calibration part of a report names the best-F1 and best-Youden thresholds; the reader's
next step is the full report at one of them. The scores are stored, so that is the ``report``
command (:mod:`..commands.report`: seconds, no judge call), not ``rescore`` (minutes of a real judge
over every kept video; it stays for another judge). The threshold is written exactly
(``repr``: the observed score itself, so ``score >= t`` selects the same episodes).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

SCRIPT = "examples/embodiment/scripts/evaluate_reward_model.sh"


def report_command(run_dir: Path, threshold: float) -> str:
    """``bash <script> report RUN_DIR --threshold T``, shell-quoted."""
    return shlex.join(["bash", SCRIPT, "report", str(run_dir), "--threshold", repr(float(threshold))])


def add_report_hints(calibration: dict[str, Any], run_dir: Path) -> None:
    """Set ``report_at_best_f1`` and ``report_at_best_youden`` (``None`` where that threshold is
    undefined) in a summary's ``calibration`` block."""
    for key in ("best_f1", "best_youden"):
        best = calibration.get(key)
        calibration[f"report_at_{key}"] = (
            report_command(run_dir, best["threshold"]) if best is not None else None
        )
