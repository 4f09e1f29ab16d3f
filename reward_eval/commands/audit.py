"""Audit a judge before training on it: how it scores the episodes a reward hacker would produce.

``python -m reward_eval audit RUN_DIR [options]`` (see ``--help``): from
the run's kept videos, every native success becomes counterfactual episodes, one per
registered perturbation (:mod:`..analysis.perturbations`: reversed, frozen, clipped, shuffled,
wrong_task), each of which must be judged a failure; the native failures are judged again as
the reference, and the successes themselves so the drop is measured on one judge, whatever
``--endpoint`` says (:mod:`..job.audit_run`, the same code ``run`` audits its own run with).

Writes ``audit.json`` (the summary of :func:`..analysis.audit.summarize_audit`, with every
case), ``report.md``, ``report.html`` and the worst cases' filmstrips (original above
counterfactual) into ``RUN_DIR/audit`` or ``--out``.

Exit status: 0 done; 1 the judge could not be reached or started; 2 bad options; 3 the run
cannot be audited (no episode log, no kept video, no native success, or no readable video of
one), with one line saying which; 4 ``--fail-above RATE`` and some row's false-positive rate
exceeds RATE (the gate of a pipeline). A 401 from the judge is status 1, naming the variable
the key was read from.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reward_eval.analysis.audit import rows_above
from reward_eval.analysis.metrics import resolve_threshold
from reward_eval.exit_statuses import EXIT_CANNOT_AUDIT, EXIT_FAIL_ABOVE, EXIT_JUDGE_UNAVAILABLE
from reward_eval.job.audit_run import audit_episodes, audit_run_dir
from reward_eval.job.judge_config import judge_settings, rejudge_keys
from reward_eval.job.options import add_scoring_options, check_scoring_options, resolve_model
from reward_eval.job.settings import RunSettings
from reward_eval.judge.counterfactuals import AuditInputError
from reward_eval.judge.endpoint import JUDGE_ERRORS, scoring_endpoint
from reward_eval.report.audit import AUDIT_DIR, audit_lines
from vlm_reward.argtypes import positive_int, unit_interval
from vlm_reward.client.scoring import RewardClient
from vlm_reward.exit_statuses import EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The ``audit`` command line."""
    p = argparse.ArgumentParser(
        prog="python -m reward_eval audit",
        description="Judge counterfactual episodes built from a run's kept videos (reversed, frozen, "
        "clipped, shuffled successes, successes under another task's instruction) and the native "
        "failures; report the judge's false-positive rate per perturbation and task. Exit status: 0 done, "
        "1 judge unavailable, 2 bad options, 3 the run cannot be audited, 4 --fail-above exceeded.",
    )
    p.add_argument("source", type=Path, help="run dir of run or rescore, made with kept videos")
    p.add_argument("--out", type=Path, help=f"audit dir (default: SOURCE/{AUDIT_DIR})")
    p.add_argument("--seed", type=int, default=0, help="seed of the shuffled order (default %(default)s)")
    p.add_argument(
        "--fail-above",
        type=unit_interval,
        metavar="RATE",
        help="exit with status 4 when any row's false-positive rate exceeds RATE",
    )
    p.add_argument(
        "--concurrency", type=positive_int, default=4, help="calls in parallel (default %(default)s)"
    )
    p.add_argument(
        "--env-config",
        type=Path,
        help="env YAML whose reward_model block is the base (default: the one the source run recorded, "
        "else the repo's libero_10.yaml)",
    )
    add_scoring_options(p, threshold_default="the source records'")
    return p


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse and cross-check the options; exits with an argparse error on bad values."""
    parser = build_parser()
    args = parser.parse_args(argv)
    check_scoring_options(parser, args)
    args.source = args.source.resolve()
    args.out = (args.out or args.source / AUDIT_DIR).resolve()
    return args


def audit(args: argparse.Namespace) -> int:
    """Execute the command for parsed ``args``; returns the exit status (see the module docstring)."""
    episodes = audit_episodes(args.source)
    records = [e.record for e in episodes]
    threshold, _ = resolve_threshold(records, args.threshold)
    settings = RunSettings.read(args.source)
    args.out.mkdir(parents=True, exist_ok=True)
    video_root = Path(os.path.commonpath([str(args.out), *(os.path.dirname(e.video) for e in episodes)]))
    model, random_model = resolve_model(args, args.out)
    with scoring_endpoint(args, model, video_root, args.out / "reward_server.log") as judge:
        judged = judge_settings(args, rejudge_keys(args, judge, records), source=settings, records=records)
        judged_by = RunSettings(
            command="audit",
            backend=judged.config().backend,
            model=model,
            random_model=random_model or (settings.random_model and settings.serves(model)),
            # The suite wrong_task picks from is the audited run's: its recorded YAML, if any.
            **{**judged.recorded(), "env_config": settings.env_config},
        )
        client = RewardClient(judged.config())
        try:
            summary, paths = audit_run_dir(
                client,
                episodes,
                args.out,
                settings=judged_by,
                threshold=threshold,
                seed=args.seed,
                concurrency=args.concurrency,
                title=f"Judge audit of {args.source}",
            )
        finally:
            client.close()
    return finish(summary, paths, args.fail_above, judged_by.random_model)


def finish(
    summary: Mapping[str, Any], paths: Mapping[str, Path], fail_above: float | None, random_model: bool
) -> int:
    """Print the audit's lines and the report's path; the exit status of ``--fail-above``."""
    for line in audit_lines(summary):
        print(f"[reward-eval] {line}")
    if random_model:
        print("[reward-eval] the judge is the tiny random-weight model: its scores are random.")
    print(f"[reward-eval] audit report: {paths['html']} (numbers: {paths['audit']})")
    over = rows_above(summary, fail_above) if fail_above is not None else []
    if over:
        rates = ", ".join(f"{name} {summary['rows'][name]['positive_rate']:.3f}" for name in over)
        print(
            f"[reward-eval] audit failed: false-positive rate above {fail_above:g}: {rates}", file=sys.stderr
        )
        return EXIT_FAIL_ABOVE
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    args = parse_args(argv)
    try:
        return audit(args)
    except AuditInputError as exc:
        print(f"[reward-eval] cannot audit: {exc}", file=sys.stderr)
        return EXIT_CANNOT_AUDIT
    except JUDGE_ERRORS as exc:
        print(f"[reward-eval] error: {exc}", file=sys.stderr)
        return EXIT_JUDGE_UNAVAILABLE


if __name__ == "__main__":
    sys.exit(main())
