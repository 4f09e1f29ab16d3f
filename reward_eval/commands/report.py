"""Re-render a run's report at another threshold or reward mode from its stored scores: no judge call.

``python -m reward_eval report RUN_DIR --threshold T [--binary|--continuous]``
reads the run's episode logs, sets each record's ``success_threshold`` (and ``binary_reward``)
and recomputes its ``vlm_success`` with the report's success rule
(:func:`vlm_reward.verdict.is_success`), exactly what ``rescore`` with the same judge and
another ``--threshold`` would write, and writes a new run dir with the same report in seconds.
A run with an audit (``audit/audit.json``) gets its audit re-counted at the new threshold from
the stored scores, its filmstrips copied. ``rescore`` stays for another judge.

Exit status: 0 done, 2 bad options (no episode log in RUN_DIR, an ``--out`` that holds one).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reward_eval.analysis.audit import ORIGINAL, summarize_audit
from reward_eval.analysis.episode_log import episode_logs
from reward_eval.analysis.metrics import resolve_threshold
from reward_eval.analysis.perturbations import FAILURE
from reward_eval.job.audit_run import summary_block
from reward_eval.job.run_dir import default_run_dir, finish_report
from reward_eval.job.settings import RunSettings
from reward_eval.report.audit import AUDIT_DIR, AUDIT_FILE, write_audit_report
from vlm_reward.argtypes import unit_interval
from vlm_reward.client.episode_log import read_episode_log, write_episode_log
from vlm_reward.exit_statuses import EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The ``report`` command line."""
    p = argparse.ArgumentParser(
        prog="python -m reward_eval report",
        description="Write a run's report at another threshold or reward mode from its stored scores "
        "(no judge call; rescore is for another judge).",
    )
    p.add_argument("source", type=Path, help="run dir of run, rescore or report")
    p.add_argument("--out", type=Path, help="new run dir (default: runs/reward_eval/<timestamp> in the repo)")
    p.add_argument("--threshold", type=unit_interval, help="success threshold (default: the records')")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--binary", dest="binary_reward", action="store_true", default=None)
    mode.add_argument("--continuous", dest="binary_reward", action="store_false")
    return p


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse and check the options; exits with an argparse error (status 2) on bad values."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.source = args.source.resolve()
    args.logs = episode_logs(args.source) if args.source.is_dir() else []
    if not args.logs:
        parser.error(f"{args.source} is not a run dir: it holds no vlm_episodes_*.jsonl episode log.")
    args.out = (args.out or default_run_dir()).resolve()
    if episode_logs(args.out):
        parser.error(f"--out {args.out} already holds an episode log; pick a new run dir.")
    return args


def recount_audit(audit: Mapping[str, Any], threshold: float) -> dict[str, Any]:
    """The audit at ``threshold`` from its stored cases; its worst cases (the highest scores,
    whatever the threshold) and their strips stay; ``wall_s`` is dropped (no call was made)."""
    names = [n for n in audit["rows"] if n not in (ORIGINAL, FAILURE)]
    counted = summarize_audit(audit["cases"], names, threshold)
    return {**audit, **{k: v for k, v in counted.items() if k != "worst"}, "wall_s": None}


def copy_audit(source: Path, out: Path, threshold: float, random_model: bool) -> dict[str, Any] | None:
    """Re-count the source's audit into ``out/audit``; the run summary's block, or ``None``."""
    path = source / AUDIT_DIR / AUDIT_FILE
    if not path.is_file():
        return None
    audit = recount_audit(json.loads(path.read_text(encoding="utf-8")), threshold)
    if (source / AUDIT_DIR / "strips").is_dir():
        shutil.copytree(source / AUDIT_DIR / "strips", out / AUDIT_DIR / "strips", dirs_exist_ok=True)
    (out / AUDIT_DIR).mkdir(parents=True, exist_ok=True)
    write_audit_report(
        out / AUDIT_DIR, audit, f"Judge audit of {source} at threshold {threshold:g}", random_model
    )
    return summary_block(audit)


def report(args: argparse.Namespace) -> dict[str, Path]:
    """Execute the command for parsed ``args``; returns the report's paths."""
    records = {log: read_episode_log(log) for log in args.logs}
    threshold = resolve_threshold([r for rs in records.values() for r in rs], args.threshold)[0]
    args.out.mkdir(parents=True, exist_ok=True)
    for log, rs in records.items():
        write_episode_log(args.out / log.name, [r.at_threshold(threshold, args.binary_reward) for r in rs])
    source_settings = RunSettings.read(args.source)
    settings = source_settings.derived(
        "report",
        source=str(args.source),
        out=str(args.out),
        threshold=threshold,
        success_threshold=threshold,
        binary_reward=args.binary_reward,
    )
    settings.write(args.out)
    audit = copy_audit(args.source, args.out, threshold, source_settings.random_model)
    subject = f"{args.source.name} at threshold {threshold:g}"
    return finish_report(args.out, settings, subject, {"audit": audit} if audit else None)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    report(parse_args(argv))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
