"""A reward backend for the training smoke tests: different scores for different episodes.

Loaded with ``--plugin tests.support.training_backends``. The GRPO check needs the episodes of
one group to get different scores, and a judge of random policy rollouts has nothing to tell
them apart by, so ``score_sequence`` hands out ``scores`` (server kwarg, comma-separated) to the
videos in the order they first arrive, cycling, and appends one JSON line per job to
``log_path``: ``{"video_path", "task", "score", "frames", "pid"}`` (``pid``: the server's). The
test matches those lines to the env's JSONL episode log by ``video_path`` (the env keeps its
videos with ``keep_temp_video``).

Several replicas share the sequence through ``log_path`` (locked while a score is drawn): the
n-th new video gets the n-th score whichever replica judges it, and a video judged again (its
first replica was killed mid-job and the client failed over) gets the score it drew first, as a
deterministic judge would. ``generate_seconds`` holds every job that long after its line is
written, so a test can kill the replica that holds one.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Sequence

from tests.support.video_frames import count_frames
from vlm_reward.backends import RewardBackend, ScoreJob, register_backend


@register_backend
class ScoreSequenceBackend(RewardBackend):
    """Answers ``<answer>S</answer>`` with the next ``S`` of ``scores`` for every new video."""

    name = "score_sequence"

    def __init__(
        self, model: str, log_path: str, scores: str = "0.2,0.9", generate_seconds: float = 0.0
    ) -> None:
        super().__init__(model)
        try:
            values = [float(s) for s in scores.split(",")]
        except ValueError:
            raise ValueError(f"scores must be comma-separated numbers in [0, 1], got {scores!r}.") from None
        if not values or any(not 0.0 <= v <= 1.0 for v in values):
            raise ValueError(f"scores must be comma-separated numbers in [0, 1], got {scores!r}.")
        self.log_path, self.values, self.generate_seconds = log_path, values, float(generate_seconds)

    def load(self) -> None:
        open(self.log_path, "a").close()

    def _draw(self, job: ScoreJob) -> float:
        """The job's score, its line written, under the log's lock (shared by every replica)."""
        with open(self.log_path, "a+", encoding="utf-8") as log:
            fcntl.flock(log, fcntl.LOCK_EX)
            log.seek(0)
            first: dict[str, float] = {}
            for line in log:
                record = json.loads(line)
                first.setdefault(record["video_path"], record["score"])
            score = first.get(job.video_path, self.values[len(first) % len(self.values)])
            record = {"video_path": job.video_path, "task": job.task_text, "score": score}
            extra = {"frames": count_frames(job.video_path), "pid": os.getpid()}
            log.write(json.dumps({**record, **extra}) + "\n")
            log.flush()
        return score

    def generate(self, jobs: Sequence[ScoreJob]) -> list[str | Exception]:
        answers = [f"<answer>{self._draw(job)}</answer>" for job in jobs]
        time.sleep(self.generate_seconds)  # the jobs are in flight, and logged, meanwhile
        return answers
