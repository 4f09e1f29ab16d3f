"""Judged episodes replayed through the live watch of the judge, as a training env would feed it.

    python -m reward_eval.classifier.watch_replay RUN_DIR [RUN_DIR...] [--min-episodes N]

Each run dir's judged episodes (an episode log: ``rescore`` of the labelled set's held-out run,
:mod:`.labelled_run`) go, in log order, through :class:`vlm_reward.watch.judge_watch.JudgeWatch`
with the guard on (``action: warn``, the env YAML's threshold, ``min_episodes`` from the option:
a held-out set holds fewer native failures than a training window) and training on the judge;
beside each, the same episodes judged by ``always-yes`` and ``always-no``. No Ray, no env, no
training: the watch is pure logic, fed exactly what ``LiberoEnv`` feeds it (the constant judges on
the first run dir's episodes: give run dirs of the same episodes). One row per judge:
episodes, the false-positive rate and the success recall (1 - the false-negative rate) at the end,
and whether the guard tripped (and after how many episodes).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reward_eval.analysis.episode_log import episode_logs
from vlm_reward.argtypes import positive_int
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.episode_log import read_episode_log
from vlm_reward.client.episode_record import EpisodeRecord
from vlm_reward.watch.judge_watch import GUARD_TRIPPED, JudgeWatch

CONSTANT_JUDGES = {"always-yes": 1.0, "always-no": 0.0}
TASKS = range(10)  # libero_10's task ids: the watch's label set


@dataclass(frozen=True)
class Verdict:
    """What the watch reads of a judgement: its score and whether it was a fallback."""

    score: float
    fallback: bool = False


@dataclass(frozen=True)
class Replay:
    """One judge's replay: its name, the episodes, the rates at the end, when the guard tripped."""

    judge: str
    episodes: int
    false_positive_rate: float | None
    success_recall: float | None
    tripped_at: int | None  # the episode (1-based) whose verdict tripped the guard; None: quiet


def watch_config(min_episodes: int, threshold: float) -> RewardModelConfig:
    guard = {"enable": True, "action": "warn", "min_episodes": min_episodes}
    return RewardModelConfig.from_mapping({"success_threshold": threshold, "guard": guard})


def replay(
    judge: str, records: Sequence[EpisodeRecord], scores: Sequence[float], cfg: RewardModelConfig
) -> Replay:
    """Feed every episode with its score to a fresh watch (in order); the row of the end."""
    watch = JudgeWatch(cfg, TASKS, seed=0, training=True)
    tripped_at = None
    for i, (record, score) in enumerate(zip(records, scores, strict=True), start=1):
        watch.episode(int(record.task_id), record.native_success, Verdict(score), step=i)
        if tripped_at is None and watch.metrics()[GUARD_TRIPPED]:
            tripped_at = i
    overall = watch.health.overall
    recall = None if overall.false_negative_rate is None else 1.0 - overall.false_negative_rate
    return Replay(judge, len(records), overall.false_positive_rate, recall, tripped_at)


def replays(run_dir: Path, min_episodes: int, constants: bool = True) -> list[Replay]:
    """The judge of ``run_dir`` (named by its records' backend) and, with ``constants``, the
    constant judges of the same episodes."""
    records = [r for log in episode_logs(run_dir) for r in read_episode_log(log) if not r.fallback]
    if not records:
        raise ValueError(f"{run_dir} holds no judged episode to replay.")
    threshold = records[0].success_threshold or RewardModelConfig().success_threshold
    cfg = watch_config(min_episodes, threshold)
    name = records[0].judge_backend or run_dir.name
    rows = [replay(name, records, [r.vlm_score for r in records], cfg)]
    if constants:
        rows += [
            replay(judge, records, [score] * len(records), cfg) for judge, score in CONSTANT_JUDGES.items()
        ]
    return rows


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def table(rows: Sequence[Replay]) -> str:
    """The replay as a Markdown table."""
    lines = [
        "| judge | episodes | false-positive rate | success recall | guard |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        guard = "quiet" if r.tripped_at is None else f"tripped at episode {r.tripped_at}"
        rates = f"{_rate(r.false_positive_rate)} | {_rate(r.success_recall)}"
        lines.append(f"| {r.judge} | {r.episodes} | {rates} | {guard} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: print the table; exit 2 with one sentence for a run dir without judged episodes."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR", help="run dirs of judged episodes")
    parser.add_argument(
        "--min-episodes", type=positive_int, default=10, help="native failures before the guard acts"
    )
    args = parser.parse_args(argv)
    watch_log = logging.getLogger("vlm_reward.watch.judge_watch")
    level = watch_log.level
    watch_log.setLevel(logging.ERROR)  # the guard's warnings: the table says when it tripped
    try:
        rows: list[Any] = [
            row
            for i, run in enumerate(args.runs)
            for row in replays(run, args.min_episodes, constants=i == 0)
        ]
    except ValueError as exc:
        parser.error(str(exc))
    finally:
        watch_log.setLevel(level)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
