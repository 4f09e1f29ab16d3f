"""Audit a judge before training on it: how it scores the episodes a reward hacker would produce.

``python -m reward_eval audit RUN_DIR [options]`` (see ``--help``): from
the run's kept videos, every native success becomes counterfactual episodes, one per
registered perturbation (:mod:`..analysis.perturbations`: reversed, frozen, clipped, shuffled,
wrong_task), each of which must be judged a failure; the native failures are judged again as
the reference, and the successes themselves so the drop is measured on one judge, whatever
``--endpoint`` says (:mod:`..judging.counterfactuals`). ``wrong_task`` takes another task's instruction
of the run's suite, of the same scene where one exists (:mod:`..analysis.hard_negatives`).

Writes ``audit.json`` (the summary of :func:`..analysis.audit.summarize_audit`, with every
case), ``report.md``, ``report.html`` and the worst cases' filmstrips (original above
counterfactual) into ``RUN_DIR/audit`` or ``--out``.

Exit status: 0 done; 1 the judge could not be reached or started; 2 bad options; 3 the run
cannot be audited (no episode log, no kept video, no native success, or no readable video of
one), with one line saying which; 4 ``--fail-above RATE`` and some row's false-positive rate
exceeds RATE (the gate of a pipeline). ``run`` audits its own run with the same code.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reward_eval.analysis.audit import rows_above, summarize_audit
from reward_eval.analysis.episode_log import episode_logs, load_episodes
from reward_eval.analysis.hard_negatives import SuiteTask, hard_negative, scene_of
from reward_eval.analysis.metrics import resolve_threshold
from reward_eval.analysis.perturbations import (
    FAILURE,
    Source,
    perturb,
    perturbation_names,
)
from reward_eval.job.options import (
    add_scoring_options,
    check_scoring_options,
    resolve_model,
)
from reward_eval.job.paths import ENV_CONFIG
from reward_eval.judging.counterfactuals import (
    AuditEpisode,
    AuditInputError,
    decode_frames,
    judge_episodes,
)
from reward_eval.judging.endpoint import JUDGE_ERRORS, scoring_endpoint
from reward_eval.report.audit import audit_lines, pair_strip, write_audit_report
from vlm_reward.argtypes import positive_int, unit_interval
from vlm_reward.client.episode_record import EpisodeRecord
from vlm_reward.client.scoring import RewardClient

EXIT_CANNOT_AUDIT = 3
EXIT_FAIL_ABOVE = 4
AUDIT_DIR = "audit"


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
        "--env-config", type=Path, default=ENV_CONFIG, help="YAML whose reward_model block is the base"
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


def audit_episodes(source: Path) -> list[AuditEpisode]:
    """The kept videos of the run dir ``source``; :class:`AuditInputError` when there is nothing
    to audit (no episode log, no kept video, no native success among them)."""
    logs = episode_logs(source) if source.is_dir() else []
    if not logs:
        raise AuditInputError(f"{source} is not a run dir: it holds no vlm_episodes_*.jsonl episode log.")
    episodes = [
        AuditEpisode(log.name, i, record, str(record.video_path))
        for log in logs
        for i, record in enumerate(load_episodes(log))
        if record.video_path and os.path.isfile(record.video_path)
    ]
    if not episodes:
        raise AuditInputError(
            f"{source} has no kept video; the audit needs a run made with --keep-videos whose videos "
            "still exist."
        )
    if not any(e.record.native_success for e in episodes):
        raise AuditInputError(
            f"none of the {len(episodes)} kept episodes of {source} is a native success; the audit "
            "builds its counterfactual episodes from successes (more episodes, or a policy that succeeds)."
        )
    return episodes


def suite_tasks(settings: Mapping[str, Any], records: Sequence[EpisodeRecord]) -> dict[int, SuiteTask]:
    """The tasks ``wrong_task`` picks from: the run's LIBERO suite (``settings.json``'s env config)
    with the scenes of the task names; without one, the tasks of the records, scenes unknown."""
    env_config = settings.get("env_config")
    if env_config and os.path.isfile(env_config):
        from omegaconf import OmegaConf
        from rlinf.envs.libero.utils import get_benchmark_overridden

        from reward_eval.job.quiet import dropping_stdout_lines

        with dropping_stdout_lines():  # LIBERO prints its task order
            bench = get_benchmark_overridden(OmegaConf.load(env_config).task_suite_name)()
        tasks = [bench.get_task(t) for t in range(bench.get_num_tasks())]
        return {t: SuiteTask(t, scene_of(task.name), task.language) for t, task in enumerate(tasks)}
    texts = {int(r.task_id): str(r.task_text or "") for r in records}
    return {t: SuiteTask(t, "", text) for t, text in sorted(texts.items())}


def read_settings(run_dir: Path) -> dict[str, Any]:
    """The run's ``settings.json`` (``{}`` when it has none)."""
    path = run_dir / "settings.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def run_audit(
    client: RewardClient,
    episodes: Sequence[AuditEpisode],
    out: Path,
    *,
    tasks: Mapping[int, SuiteTask],
    threshold: float,
    seed: int,
    concurrency: int,
) -> dict[str, Any]:
    """Judge the counterfactuals of ``episodes``, draw the worst cases into ``out/strips`` and
    return the summary, ``cases``, ``unreadable`` episodes and ``wall_s`` (seconds it took) included."""
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    negatives = {task_id: hard_negative(task_id, tasks) for task_id in {e.record.task_id for e in episodes}}
    cases, unreadable = judge_episodes(client, episodes, negatives, seed, out, concurrency)
    summary = summarize_audit(cases, perturbation_names(), threshold)
    draw_worst_cases(summary, out)
    wall_s = round(time.monotonic() - started, 1)
    return {**summary, "seed": seed, "unreadable": unreadable, "cases": cases, "wall_s": wall_s}


def draw_worst_cases(summary: dict[str, Any], out: Path) -> None:
    """Draw each worst case, the episode above its counterfactual (rebuilt: perturbations are
    pure), into ``out/strips``; set the case's ``strip`` (relative to ``out``)."""
    for name, cases in summary["worst"].items():
        for k, case in enumerate(cases):
            try:
                frames, _ = decode_frames(case["video_path"])
            except ValueError:
                continue  # the video went away since it was judged: no strip, the numbers stand
            source = Source(frames, case["task_text"], case["judged_task_text"], tuple(case["seed"]))
            counterfactual = frames if name == FAILURE else perturb(name, source).frames
            strip = f"strips/{name}_{k}.png"
            where = f"task {case['task_id']} ({case['log']}:{case['record']})"
            title = f"{name}: {where}, judged as: {case['judged_task_text']}"
            pair_strip(out / strip, frames, counterfactual, title)
            case["strip"] = strip


def audit(args: argparse.Namespace) -> int:
    """Execute the command for parsed ``args``; returns the exit status (see the module docstring)."""
    from reward_eval.commands.rescore import is_source_random_model, reward_config

    episodes = audit_episodes(args.source)
    records = [e.record for e in episodes]
    threshold, _ = resolve_threshold(records, args.threshold)
    settings = read_settings(args.source)
    tasks = suite_tasks(settings, records)
    args.out.mkdir(parents=True, exist_ok=True)
    video_root = Path(os.path.commonpath([str(args.out), *(os.path.dirname(e.video) for e in episodes)]))
    model, random_model = resolve_model(args, args.out)
    random_model = random_model or is_source_random_model(args.source, model)
    with scoring_endpoint(args, model, video_root, args.out / "reward_server.log") as endpoint:
        client = RewardClient(reward_config(args, endpoint, records))
        try:
            summary = run_audit(
                client,
                episodes,
                args.out,
                tasks=tasks,
                threshold=threshold,
                seed=args.seed,
                concurrency=args.concurrency,
            )
        finally:
            client.close()
    paths = write_audit_report(args.out, summary, f"Judge audit of {args.source}", random_model)
    return finish(summary, paths, args.fail_above, random_model)


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
    return 0


def audit_own_run(
    args: argparse.Namespace, endpoint: str, run_dir: Path, random_model: bool
) -> dict[str, Any]:
    """``run``'s audit of the run it just made, on its judge at ``endpoint``: writes
    ``run_dir/audit`` and returns the block of the run's summary (the audit without its
    cases, ``dir`` naming the audit dir), or ``{"skipped": reason}`` when the run cannot be
    audited (e.g. no native success): a run is not a failure for that."""
    from reward_eval.commands.rescore import reward_config

    out = run_dir / AUDIT_DIR
    try:
        episodes = audit_episodes(run_dir)
    except AuditInputError as exc:
        return {"skipped": str(exc)}
    records = [e.record for e in episodes]
    client = RewardClient(reward_config(args, endpoint, records))
    try:
        summary = run_audit(
            client,
            episodes,
            out,
            tasks=suite_tasks(read_settings(run_dir), records),
            threshold=resolve_threshold(records, args.threshold)[0],
            seed=0,
            concurrency=4,
        )
    except AuditInputError as exc:
        return {"skipped": str(exc)}
    finally:
        client.close()
    write_audit_report(out, summary, f"Judge audit of {run_dir}", random_model)
    return {"dir": AUDIT_DIR, **{k: v for k, v in summary.items() if k != "cases"}}


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
        return 1


if __name__ == "__main__":
    sys.exit(main())
