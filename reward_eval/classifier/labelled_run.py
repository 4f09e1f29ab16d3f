"""A labelled set's episodes as a run dir, so every judge tool reads them as it reads a run's.

    python -m reward_eval.classifier.labelled_run [DATA] --split held_out --out RUN_DIR

writes ``RUN_DIR/vlm_episodes_eval_rank0.jsonl`` (one record per episode of the split: task, trial,
native success, its served MP4 as the kept video, ``frames_sent`` = its frames, and the simulator's
goal fraction of each of them, :data:`~reward_eval.analysis.frame_progress.GOAL_FRACTION`, which
every rescore keeps and a progress judge is measured against) and
``settings.json``, so ``reward-eval rescore RUN_DIR --backend resnet --model CKPT`` judges them
(the evaluation table, calibration, AUROC), ``reward-eval audit`` on that rescored run builds
its counterfactuals, and :mod:`vlm_reward.watch` replays them. Nothing is judged here: each record
is marked a fallback (``error_kind`` ``not_judged``), never a verdict a report could count.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from reward_eval.analysis.frame_progress import GOAL_FRACTION
from reward_eval.classifier.labelled_set import DEFAULT_DATA_DIR, SPLITS, LabelledSet, load_set
from reward_eval.job.paths import ENV_CONFIG
from reward_eval.job.settings import RunSettings
from vlm_reward.client.episode_log import episode_log_path, write_episode_log
from vlm_reward.client.episode_record import EpisodeRecord

NOT_JUDGED = "not_judged"


def records(labelled_set: LabelledSet, split: str) -> list[EpisodeRecord]:
    """One record per episode of ``split``, its served video kept, not judged."""
    return [
        EpisodeRecord.from_json(
            {
                "split": "eval",
                "rank": 0,
                "env": i,
                "episode": 0,
                "task_id": e.task_id,
                "task_text": e.task_text,
                "trial_id": e.trial_id,
                "episode_length": e.episode_length,
                "native_success": e.native_success,
                "vlm_score": 0.0,
                "fallback": True,
                "error": "a labelled set's episode: not judged",
                "error_kind": NOT_JUDGED,
                "frames_sent": len(e.served.steps),
                "video_path": str(labelled_set.path(e.served).resolve()),
                GOAL_FRACTION: list(e.served.goal_fraction),
            }
        )
        for i, e in enumerate(labelled_set.split(split))
    ]


def write_run(labelled_set: LabelledSet, split: str, out: Path) -> Path:
    """The run dir of ``split`` in ``out`` (see the module docstring); returns its episode log."""
    details = {"data": str(labelled_set.root), "split": split, "suite": labelled_set.settings.get("suite")}
    return write_records_run(out, records(labelled_set, split), details)


def write_records_run(out: Path, episodes: Sequence[EpisodeRecord], details: dict[str, object]) -> Path:
    """``episodes`` (not judged) as the run dir ``out``, ``details`` in its settings; returns its
    episode log. A dir that already holds a log raises ``ValueError``: nothing is overwritten."""
    out.mkdir(parents=True, exist_ok=True)
    log = Path(episode_log_path(str(out), "eval", 0))
    if log.exists():
        raise ValueError(f"{out} already holds an episode log; pick a new run dir.")
    write_episode_log(log, list(episodes))
    RunSettings(command="labelled-run", env_config=str(ENV_CONFIG), details=details).write(out)
    return log


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: exit 0, or 2 with one sentence for a bad set or run dir."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA_DIR, help="labelled frame set")
    parser.add_argument("--split", choices=SPLITS, default="held_out")
    parser.add_argument("--out", type=Path, required=True, help="the run dir to write")
    args = parser.parse_args(argv)
    try:
        log = write_run(load_set(args.data), args.split, args.out.resolve())
    except ValueError as exc:
        parser.error(str(exc))
    print(f"[reward-eval] {args.split} episodes of {args.data} as a run: {log}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
