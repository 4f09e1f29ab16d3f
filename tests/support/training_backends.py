"""A reward backend for the training smoke tests: different scores for different episodes.

Loaded with ``--plugin tests.support.training_backends``. The GRPO check needs the episodes of
one group to get different scores, and a judge of random policy rollouts has nothing to tell
them apart by, so ``score_sequence`` hands out ``scores`` (server kwarg, comma-separated) in the
order the jobs arrive, cycling, and appends one JSON line per job to ``log_path``:
``{"video_path", "task", "score", "frames"}``. The test matches those lines to the env's JSONL
episode log by ``video_path`` (the env keeps its videos with ``keep_temp_video``).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Sequence

from vlm_reward.backends import RewardBackend, ScoreJob, register_backend
from vlm_reward.video_io import count_frames


@register_backend
class ScoreSequenceBackend(RewardBackend):
    """Answers ``<answer>S</answer>`` with the next ``S`` of ``scores`` for every job."""

    name = "score_sequence"

    def __init__(self, model: str, log_path: str, scores: str = "0.2,0.9") -> None:
        super().__init__(model)
        try:
            values = [float(s) for s in scores.split(",")]
        except ValueError:
            raise ValueError(f"scores must be comma-separated numbers in [0, 1], got {scores!r}.") from None
        if not values or any(not 0.0 <= v <= 1.0 for v in values):
            raise ValueError(f"scores must be comma-separated numbers in [0, 1], got {scores!r}.")
        self.log_path = log_path
        self._next = itertools.cycle(values)
        self._lock = threading.Lock()

    def load(self) -> None:
        open(self.log_path, "a").close()

    def generate(self, jobs: Sequence[ScoreJob]) -> list[str | Exception]:
        answers = []
        with self._lock, open(self.log_path, "a", encoding="utf-8") as log:
            for job in jobs:
                score = next(self._next)
                record = {"video_path": job.video_path, "task": job.task_text, "score": score}
                log.write(json.dumps({**record, "frames": count_frames(job.video_path)}) + "\n")
                answers.append(f"<answer>{score}</answer>")
        return answers
