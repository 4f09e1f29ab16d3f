"""Re-score a finished run's kept episode videos with another judge, without rolling out again.

``python -m reward_eval rescore SOURCE [options]`` (see ``--help``):
SOURCE is a run dir of ``run`` (or of an earlier ``rescore``) or one episode JSONL whose
videos were kept (``video_path`` set and the file present). Every video is sent to the
reward server through the env's own client (``RewardClient.score_video``: same payload,
retries, validation and fallback as during the rollout), with the ``frames_sent`` of its
record as ``nframes``. The new run dir gets the same JSONL format, the native outcome and
episode metadata copied from the source, ``settings.json`` and the same report.

Unset judgement options keep the source's: ``--threshold`` defaults to the records'
``success_threshold``, ``--binary/--continuous`` to their ``binary_reward``. Re-scoring
with the same backend and model reproduces the scores (the backends decode greedily);
another ``--threshold`` changes only ``vlm_success``.

``--prefixes K`` also judges the growing prefixes of every video (:mod:`..judge.prefixes`) and
adds the progress order (VOC) to ``summary.json`` (``progress``), ``voc_episodes.jsonl``
and the report.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reward_eval.analysis.episode_log import KeptEpisode, episode_logs, kept_episodes
from reward_eval.analysis.progress import summarize_progress
from reward_eval.job.judge_config import judge_settings, judged_run_settings, rejudge_keys
from reward_eval.job.options import add_scoring_options, check_scoring_options, prefix_count, resolve_model
from reward_eval.job.run_dir import default_run_dir, finish_report, run_command
from reward_eval.job.settings import RunSettings
from reward_eval.judge.calls import JudgeCall, judge_all
from reward_eval.judge.endpoint import scoring_endpoint
from reward_eval.judge.prefixes import EPISODES_FILE, score_prefixes, write_episodes
from vlm_reward.argtypes import positive_int
from vlm_reward.client.episode_log import read_episode_log, write_episode_log
from vlm_reward.client.episode_record import EpisodeRecord
from vlm_reward.client.scoring import RewardClient


def build_parser() -> argparse.ArgumentParser:
    """The ``rescore`` command line."""
    p = argparse.ArgumentParser(
        prog="python -m reward_eval rescore",
        description="Re-score the kept videos of an evaluation run with another backend, model, "
        "threshold or score mode, and write a new run dir with the same report.",
    )
    p.add_argument("source", type=Path, help="run dir or vlm_episodes_*.jsonl of a run made with kept videos")
    p.add_argument("--out", type=Path, help="new run dir (default: runs/reward_eval/<timestamp> in the repo)")
    p.add_argument(
        "--concurrency", type=positive_int, default=8, help="videos scored in parallel (default %(default)s)"
    )
    p.add_argument(
        "--env-config",
        type=Path,
        help="env YAML whose reward_model block is the base (default: the one the source run recorded, "
        "else the repo's libero_10.yaml)",
    )
    p.add_argument(
        "--prefixes",
        type=prefix_count,
        metavar="K",
        help="also judge the first 1/K, 2/K, ..., K/K of each video's frames and report the "
        "progress order (VOC: Spearman of score vs prefix, per episode and task); up to episodes x K "
        "more calls",
    )
    add_scoring_options(p, threshold_default="the source records'")
    return p


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse and cross-check the options; exits with an argparse error on bad values."""
    parser = build_parser()
    args = parser.parse_args(argv)
    check_scoring_options(parser, args)
    try:
        args.sources = load_sources(args.source)
    except ValueError as exc:
        parser.error(str(exc))
    args.out = (args.out or default_run_dir()).resolve()
    if episode_logs(args.out):
        parser.error(f"--out {args.out} already holds an episode log; pick a new run dir.")
    return args


def source_logs(source: Path) -> list[Path]:
    """The episode logs to re-score: ``source`` itself, or those in the run dir ``source``."""
    if source.is_file():
        return [source]
    if source.is_dir():
        logs = episode_logs(source)
        if logs:
            return logs
        raise ValueError(f"{source} holds no vlm_episodes_*.jsonl episode log.")
    raise ValueError(f"source {source} is neither a run dir nor an episode JSONL file.")


def load_sources(source: Path) -> dict[Path, list[KeptEpisode]]:
    """``{episode log: its episodes}``; ``ValueError`` when a log is empty or a video is missing."""
    sources = {}
    for log in source_logs(source):
        records = read_episode_log(log)
        if not records:
            raise ValueError(f"{log} holds no episodes to re-score.")
        kept = kept_episodes([log])
        have = {e.index for e in kept}
        missing = [i for i in range(len(records)) if i not in have]
        if missing:
            raise ValueError(
                f"{len(missing)} of {len(records)} episodes in {log} have no kept video (first: record "
                f"{missing[0]}); re-scoring needs a run made with --keep-videos whose videos still exist."
            )
        sources[log] = kept
    return sources


def rescore_records(
    client: RewardClient, episodes: Sequence[KeptEpisode], concurrency: int
) -> list[EpisodeRecord]:
    """New records, in source order: the source's metadata and native outcome, the new judgement."""
    cfg = client.cfg
    calls = [
        JudgeCall(
            str(e.record.task_text),
            e.video,
            int(e.record.frames_sent or cfg.nframes),
            e.record.native_success,
        )
        for e in episodes
    ]
    results = judge_all(client, calls, concurrency, "rescore")
    return [
        EpisodeRecord.judged(e.record.meta, result, e.record.native_success, cfg)
        for e, result in zip(episodes, results, strict=True)
    ]


def rescore(args: argparse.Namespace) -> dict[str, Path]:
    """Execute the command for parsed ``args``; returns the report's paths."""
    out, sources = args.out, args.sources
    out.mkdir(parents=True, exist_ok=True)
    folders = [os.path.dirname(os.path.abspath(e.video)) for kept in sources.values() for e in kept]
    if args.prefixes:  # the prefix videos are written into out: the local server must read them
        folders.append(str(out))
    video_root = Path(os.path.commonpath(folders))
    extra: dict[str, Any] = {}
    model, random_model = resolve_model(args, out)
    source = RunSettings.read(args.source if args.source.is_dir() else args.source.parent)
    random_model = random_model or (source.random_model and source.serves(model))
    records = [e.record for kept in sources.values() for e in kept]
    with scoring_endpoint(args, model, video_root, out / "reward_server.log") as judge:
        judged = judge_settings(args, rejudge_keys(args, judge, records), source=source, records=records)
        settings = judged_run_settings(
            "rescore",
            args,
            model=model,
            random_model=random_model,
            judge=judge,
            judged=judged,
            skip=("sources",),
        )
        settings.write(out)
        client = RewardClient(judged.config())
        try:
            for log, kept in sources.items():
                write_episode_log(out / log.name, rescore_records(client, kept, args.concurrency))
            if args.prefixes:
                extra["progress"] = progress_order(client, sources, args.prefixes, out, args.concurrency)
        finally:
            client.close()
    return finish_report(out, settings, f"re-scored {args.source}", extra)


def progress_order(
    client: RewardClient, sources: Mapping[Path, list[KeptEpisode]], k: int, out: Path, concurrency: int
) -> dict[str, Any]:
    """Judge the ``k`` prefixes of every kept video; write ``voc_episodes.jsonl`` and return the
    summary's ``progress`` block (:func:`..analysis.progress.summarize_progress`, with the
    per-episode results under ``episodes``)."""
    episodes = [e for kept in sources.values() for e in kept]
    results = score_prefixes(client, episodes, k, out, concurrency)
    write_episodes(out / EPISODES_FILE, results)
    return {**summarize_progress(results, k), "episodes_file": EPISODES_FILE, "episodes": results}


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    return run_command(rescore, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
