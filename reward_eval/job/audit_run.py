"""One audit of a run dir, shared by the ``audit`` command and ``run``'s own audit.

From the run's kept videos (:func:`..analysis.episode_log.kept_episodes`), every native success
becomes counterfactual episodes, one per registered perturbation (:mod:`..analysis.perturbations`),
each of which must be judged a failure; the native failures are judged again as the reference
(:mod:`..judge.counterfactuals`). ``wrong_task`` takes another task's instruction of the run's suite,
of the same scene where one exists (:mod:`..analysis.hard_negatives`). :func:`audit_run_dir`
judges them, draws the worst cases into ``out/strips`` and writes ``audit.json``,
``report.md`` and ``report.html`` into ``out``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reward_eval.analysis.audit import summarize_audit
from reward_eval.analysis.episode_log import KeptEpisode, episode_logs, kept_episodes
from reward_eval.analysis.hard_negatives import SuiteTask, hard_negative, scene_of
from reward_eval.analysis.judges import count_judges
from reward_eval.analysis.perturbations import FAILURE, Source, perturb, perturbation_names
from reward_eval.job.settings import RunSettings
from reward_eval.judge.counterfactuals import AuditInputError, decode_frames, judge_episodes
from reward_eval.report.audit import AUDIT_DIR, pair_strip, write_audit_report
from vlm_reward.client.episode_record import EpisodeRecord
from vlm_reward.client.scoring import RewardClient


def audit_episodes(source: Path) -> list[KeptEpisode]:
    """The kept videos of the run dir ``source``; :class:`AuditInputError` when there is nothing
    to audit (no episode log, no kept video, no native success among them)."""
    logs = episode_logs(source) if source.is_dir() else []
    if not logs:
        raise AuditInputError(f"{source} is not a run dir: it holds no vlm_episodes_*.jsonl episode log.")
    episodes = kept_episodes(logs)
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


def suite_tasks(settings: RunSettings, records: Sequence[EpisodeRecord]) -> dict[int, SuiteTask]:
    """The tasks ``wrong_task`` picks from: the run's LIBERO suite (its settings' env config)
    with the scenes of the task names; without one, the tasks of the records, scenes unknown."""
    if settings.env_config and os.path.isfile(settings.env_config):
        from reward_eval.job.env_config import load_env_config

        return libero_suite_tasks(load_env_config(settings.env_config).task_suite_name)
    texts = {int(r.task_id): str(r.task_text or "") for r in records}
    return {t: SuiteTask(t, "", text) for t, text in sorted(texts.items())}


def libero_suite_tasks(suite: str) -> dict[int, SuiteTask]:
    """Every task of LIBERO suite ``suite`` (RLinf's task order) with its scene and instruction."""
    from rlinf.envs.libero.utils import get_benchmark_overridden

    from reward_eval.job.quiet import dropping_stdout_lines

    with dropping_stdout_lines():  # LIBERO prints its task order
        bench = get_benchmark_overridden(suite)()
    tasks = [bench.get_task(t) for t in range(bench.get_num_tasks())]
    return {t: SuiteTask(t, scene_of(task.name), task.language) for t, task in enumerate(tasks)}


def audit_run_dir(
    client: RewardClient,
    episodes: Sequence[KeptEpisode],
    out: Path,
    *,
    settings: RunSettings,
    threshold: float,
    seed: int,
    concurrency: int,
    title: str,
) -> tuple[dict[str, Any], dict[str, Path]]:
    """Judge the counterfactuals of ``episodes`` (from :func:`audit_episodes`), write the audit
    into ``out``; return the summary (``cases``, ``unreadable`` and ``wall_s`` included) and
    the paths of what was written (``audit``, ``markdown``, ``html``)."""
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    tasks = suite_tasks(settings, [e.record for e in episodes])
    negatives = {task_id: hard_negative(task_id, tasks) for task_id in {e.record.task_id for e in episodes}}
    cases, unreadable = judge_episodes(client, episodes, negatives, seed, out, concurrency)
    summary = summarize_audit(cases, perturbation_names(), threshold)
    draw_worst_cases(summary, out)
    wall_s = round(time.monotonic() - started, 1)
    judges = count_judges(case["judge"] for case in cases if case["score"] is not None)
    summary = {**summary, "judges": judges, "seed": seed, "unreadable": unreadable, "cases": cases}
    summary["wall_s"] = wall_s
    return summary, write_audit_report(out, summary, title, settings.random_model)


def summary_block(summary: Mapping[str, Any], audit_dir: str = AUDIT_DIR) -> dict[str, Any]:
    """The audit as a block of a run's summary: without its cases, ``dir`` naming the audit dir."""
    return {"dir": audit_dir, **{k: v for k, v in summary.items() if k != "cases"}}


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
