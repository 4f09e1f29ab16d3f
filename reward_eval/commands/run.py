"""The reward-model evaluation job: roll out LIBERO-10 episodes, score them, write a report.

``python -m reward_eval run [options]`` (see ``--help``):

1. picks the episodes deterministically: for each ``--tasks`` id, the first
   ``--episodes-per-task`` initial states (trials) of that task, as RLinf reset state ids;
2. starts a local reward server (``--backend/--model``; the tiny random checkpoint when a
   Qwen2.5-VL backend gets no model; vLLM backends on the vLLM venv) or uses ``--endpoint``;
3. rolls the episodes out ``--num-envs`` at a time through the project's ``LiberoEnv``
   (``examples/embodiment/config/env/libero_10.yaml`` with ``reward_model.enable=True``),
   with the ``--policy`` choosing each chunk of actions; the env scores every episode once
   at its end and appends its JSONL line to the run dir;
4. unless ``--no-audit``, audits the judge on counterfactual episodes of the kept videos
   (:mod:`..job.audit_run`, as the ``audit`` command does, into ``audit/``) while the
   server is still up;
5. summarizes the JSONL (``analysis.metrics.summarize``), writes ``summary.json``,
   ``report.md``, ``report.html`` and the plots (``report.evaluation.write_report``), prints
   the short table and the report's path.

The run dir (``--out``) holds ``settings.json``, ``vlm_episodes_train_rank0.jsonl``, the
kept episode videos (``videos/``, needed by ``rescore`` and the disagreement strips), the
server log and the report. A local server gets the run dir as its ``--video-root``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from reward_eval.analysis.episode_log import episode_logs
from reward_eval.analysis.metrics import resolve_threshold
from reward_eval.job.audit_run import audit_episodes, audit_run_dir, summary_block
from reward_eval.job.env_config import load_env_config
from reward_eval.job.judge_config import (
    JudgeSettings,
    job_keys,
    judge_settings,
    judged_run_settings,
    rejudge_keys,
)
from reward_eval.job.options import add_scoring_options, check_scoring_options, resolve_model
from reward_eval.job.paths import ENV_CONFIG
from reward_eval.job.quiet import dropping_stdout_lines
from reward_eval.job.rollout import make_env, rollout
from reward_eval.job.run_dir import default_run_dir, finish_report, run_command
from reward_eval.job.settings import RunSettings
from reward_eval.judge.counterfactuals import AuditInputError
from reward_eval.judge.endpoint import JudgeEndpoint, scoring_endpoint
from reward_eval.policies import make_policy, policy_names
from reward_eval.report.audit import AUDIT_DIR
from vlm_reward.argtypes import json_object, positive_int
from vlm_reward.client.scoring import RewardClient

DEFAULT_TASKS = "0,1"


def task_ids(text: str) -> list[int]:
    """argparse type: comma-separated task ids, ``0,1,7``; order kept, duplicates rejected."""
    try:
        ids = [int(part) for part in text.split(",")]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers like 0,1,7, got {text!r}"
        ) from exc
    if len(set(ids)) != len(ids):
        raise argparse.ArgumentTypeError(f"task ids repeat in {text!r}")
    return ids


def build_parser() -> argparse.ArgumentParser:
    """The ``run`` command line."""
    p = argparse.ArgumentParser(
        prog="python -m reward_eval run",
        description="Roll out LIBERO-10 episodes, score each with a VLM reward server, and report how "
        "the VLM's verdicts agree with the simulator's success.",
    )
    roll = p.add_argument_group("rollout")
    roll.add_argument(
        "--tasks",
        type=task_ids,
        default=task_ids(DEFAULT_TASKS),
        help=f"comma-separated libero_10 task ids (default {DEFAULT_TASKS})",
    )
    roll.add_argument(
        "--episodes-per-task",
        type=positive_int,
        default=2,
        help="play trials 0..N-1 of each task (default %(default)s)",
    )
    roll.add_argument(
        "--max-episode-steps", type=positive_int, help="truncate episodes here (default: the env YAML's)"
    )
    roll.add_argument(
        "--policy", default="random", help=f"one of: {', '.join(policy_names())} (default %(default)s)"
    )
    roll.add_argument("--policy-seed", type=int, default=0, help="seed of the policy (default %(default)s)")
    roll.add_argument("--policy-kwargs", type=json_object, default={}, help="e.g. '{\"scale\": 0.3}'")
    roll.add_argument(
        "--num-envs", type=positive_int, default=2, help="parallel LIBERO envs (default %(default)s)"
    )
    roll.add_argument(
        "--chunk", type=positive_int, default=8, help="actions per chunk_step (default %(default)s)"
    )
    roll.add_argument(
        "--env-config",
        type=Path,
        help="env YAML: its reward_model block is what every call asks (default: the repo's libero_10.yaml)",
    )
    add_scoring_options(p, threshold_default="the env YAML's")
    out = p.add_argument_group("output")
    out.add_argument("--out", type=Path, help="run dir (default: runs/reward_eval/<timestamp> in the repo)")
    out.add_argument(
        "--keep-videos",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep each episode's scored MP4 in <out>/videos (rescore and the report's strips need them)",
    )
    out.add_argument(
        "--audit",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="after the rollout, audit the judge on counterfactual episodes of the kept videos "
        "(the audit command; into <out>/audit, in the report)",
    )
    return p


# What parse_args derives from the options: recorded on their own, not as options.
DERIVED = ("policy_obj", "reset_state_ids")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse and cross-check the options; exits with an argparse error on bad values."""
    parser = build_parser()
    args = parser.parse_args(argv)
    check_scoring_options(parser, args)
    try:
        args.policy_obj = make_policy(args.policy, seed=args.policy_seed, **args.policy_kwargs)
    except (ValueError, TypeError) as exc:
        parser.error(f"--policy {args.policy} with --policy-kwargs {args.policy_kwargs}: {exc}")
    try:
        suite = load_env_config(args.env_config or ENV_CONFIG).task_suite_name
    except ValueError as exc:
        parser.error(f"--env-config: {exc}")
    args.out = (args.out or default_run_dir()).resolve()
    if episode_logs(args.out):
        parser.error(f"--out {args.out} already holds an episode log; pick a new run dir.")
    try:  # last: it imports LIBERO (seconds), the checks above are instant
        args.reset_state_ids = plan_reset_state_ids(
            args.tasks, args.episodes_per_task, trials_per_task(suite)
        )
    except ValueError as exc:
        parser.error(f"--tasks/--episodes-per-task: {exc}")
    return args


def plan_reset_state_ids(
    tasks: Sequence[int], episodes_per_task: int, trials_per_task: Sequence[int]
) -> list[int]:
    """RLinf reset state ids of trials ``0..episodes_per_task-1`` of each task, in ``tasks`` order.

    RLinf numbers the initial states of a suite consecutively, task by task: task ``t``'s
    trial ``k`` is ``sum(trials_per_task[:t]) + k`` (the inverse of its
    ``_get_task_and_trial_ids_from_reset_state_ids``).
    """
    ids = []
    for task in tasks:
        if not 0 <= task < len(trials_per_task):
            raise ValueError(f"task id {task} is out of range; valid ids: 0..{len(trials_per_task) - 1}.")
        if episodes_per_task > trials_per_task[task]:
            raise ValueError(
                f"task {task} has {trials_per_task[task]} initial states, fewer than "
                f"--episodes-per-task {episodes_per_task}."
            )
        first = sum(trials_per_task[:task])
        ids += [first + k for k in range(episodes_per_task)]
    return ids


def trials_per_task(suite: str) -> list[int]:
    """Number of initial states of each task of the LIBERO suite, as RLinf counts them."""
    from rlinf.envs.libero.utils import get_benchmark_overridden

    with dropping_stdout_lines():  # LIBERO prints its task order
        bench = get_benchmark_overridden(suite)()
    return [len(bench.get_task_init_states(t)) for t in range(bench.get_num_tasks())]


def run_judge_settings(args: argparse.Namespace, judge: JudgeEndpoint, run_dir: Path) -> JudgeSettings:
    """The block every episode's call uses: the env YAML's under the options, the env's client
    in shadow mode (nothing trains here, the records say so), logging and keeping videos in ``run_dir``."""
    job = job_keys(
        args,
        judge,
        episode_log_dir=str(run_dir),
        keep_temp_video=args.keep_videos,
        temp_video_dir=str(run_dir / "videos"),
    )
    return judge_settings(args, job)


def env_config(args: argparse.Namespace, judged: JudgeSettings) -> DictConfig:
    """The env YAML, its ``reward_model`` block replaced by the resolved one."""
    cfg = load_env_config(judged.env_config)
    if args.max_episode_steps is not None:
        cfg.max_episode_steps = args.max_episode_steps
    cfg.task_id_filter = sorted(args.tasks)  # the env's first (random) reset stays in our tasks
    cfg.reward_model = OmegaConf.create(dict(judged.block.values))
    return cfg


def run(args: argparse.Namespace) -> dict[str, Path]:
    """Execute the job for parsed ``args``; returns the report's paths."""
    run_dir, reset_ids, policy = args.out, args.reset_state_ids, args.policy_obj
    run_dir.mkdir(parents=True, exist_ok=True)
    model, random_model = resolve_model(args, run_dir)
    with scoring_endpoint(args, model, run_dir, run_dir / "reward_server.log") as judge:
        judged = run_judge_settings(args, judge, run_dir)
        settings = judged_run_settings(
            "run",
            args,
            model=model,
            random_model=random_model,
            judge=judge,
            judged=judged,
            skip=DERIVED,
            policy=args.policy,
            reset_state_ids=args.reset_state_ids,
        )
        settings.write(run_dir)
        env = make_env(env_config(args, judged), min(args.num_envs, len(reset_ids)))
        try:
            rollout(env, policy, reset_ids, args.chunk)
        finally:
            env.close()
            env.env.close()
        extra = {"audit": own_audit(args, judge, settings)} if wants_audit(args) else {}
    tasks = ",".join(map(str, args.tasks))
    return finish_report(run_dir, settings, f"libero_10 tasks {tasks}, {args.policy} policy", extra)


def own_audit(args: argparse.Namespace, judge: JudgeEndpoint, settings: RunSettings) -> dict[str, Any]:
    """The audit of the run just made, on its judge, into ``RUN_DIR/audit``: the block of the run's
    summary, or ``{"skipped": reason}`` when the run cannot be audited (e.g. no native success),
    which is not a failure of the run."""
    try:
        episodes = audit_episodes(args.out)
    except AuditInputError as exc:
        return {"skipped": str(exc)}
    records = [e.record for e in episodes]
    judged = judge_settings(args, rejudge_keys(args, judge, records), source=settings, records=records)
    client = RewardClient(judged.config())
    try:
        summary, _ = audit_run_dir(
            client,
            episodes,
            args.out / AUDIT_DIR,
            settings=settings,
            threshold=resolve_threshold(records, args.threshold)[0],
            seed=0,
            concurrency=4,
            title=f"Judge audit of {args.out}",
        )
    except AuditInputError as exc:
        return {"skipped": str(exc)}
    finally:
        client.close()
    return summary_block(summary)


def wants_audit(args: argparse.Namespace) -> bool:
    """Whether to audit: ``--audit`` (the default) and the videos kept (the audit reads them)."""
    return bool(args.audit and args.keep_videos)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    return run_command(run, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
