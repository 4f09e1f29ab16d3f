"""A stand-in judge for the learning run's test: ``--plugin tests.support.learning_judge``.

Its ``scripted_scores`` backend answers each request under an instruction of ``per_task`` with that
task's scores in turn (its k-th request gets ``per_task[task][k % len]``), any other with a score
from its own seeded generator (uniform in [0.05, 0.95]), so the episodes of a GRPO group get
different rewards even when their videos are the same; it appends ``{"score": ..., "task_text":
...}`` to ``log_path``. The test follows those scores into the env's episode log, the GRPO batch's
returns and advantages, RLinf's reward filter and the policy's update. Importing the module also
registers the comparison run ``wire`` that uses it (``compare_rewards.sh --plugin
tests.support.learning_judge --runs wire``), a graded reward whose :data:`PER_TASK` scores give a
group of task 0 a spread but a mean return below the mission's filter bound (0.02 and 0.14: 0.4 <
0.5) and a group of task 1 one inside it (0.3 and 0.9: 3.0).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlm_reward.backends import ProbabilityAnswer, RewardBackend, ScoreJob, register_backend

SCORES_FILE = "wire_scores.jsonl"
TASK_0 = "put both the alphabet soup and the tomato sauce in the basket"
TASK_1 = "put both the cream cheese box and the butter in the basket"
PER_TASK = {TASK_0: [0.02, 0.14], TASK_1: [0.3, 0.9]}


@register_backend
class ScriptedScoresBackend(RewardBackend):
    """Answers seeded pseudo-random probabilities and records each one."""

    name = "scripted_scores"
    default_score_mode = "probability"
    score_modes = ("probability",)

    def __init__(
        self, model: str, log_path: str, seed: int = 0, per_task: dict[str, list[float]] | None = None
    ) -> None:
        super().__init__(model)
        self.log_path = log_path
        self._rng = np.random.default_rng(seed)
        self._per_task = dict(per_task or {})
        self._asked: dict[str, int] = {}  # requests answered per task of per_task
        self._lock = threading.Lock()

    def load(self) -> None:
        open(self.log_path, "a").close()

    def generate(self, jobs: Sequence[ScoreJob]) -> list[ProbabilityAnswer]:
        with self._lock:
            scores = [self._score(job.task_text) for job in jobs]
            with open(self.log_path, "a") as log:
                for job, score in zip(jobs, scores, strict=True):
                    log.write(json.dumps({"score": score, "task_text": job.task_text}) + "\n")
        return [ProbabilityAnswer(score, "yes" if score >= 0.5 else "no") for score in scores]

    def _score(self, task: str) -> float:
        if task not in self._per_task:
            return round(float(self._rng.uniform(0.05, 0.95)), 6)
        k = self._asked.get(task, 0)
        self._asked[task] = k + 1
        return self._per_task[task][k % len(self._per_task[task])]


def _register_run() -> None:
    from examples.embodiment.reward_comparison import judges, runs

    def prepare(judges_dir: Path) -> Path:
        return judges_dir

    def kwargs(judges_dir: Path) -> dict[str, Any]:
        return {"log_path": str(judges_dir / SCORES_FILE), "seed": 0, "per_task": PER_TASK}

    judge = judges.Judge("scripted_scores", prepare, kwargs, plugins=(__name__,))
    judges.JUDGES.setdefault("wire", judge)
    reward_model = {
        "backend": "scripted_scores",
        "binary_reward": False,
        "nframes": 16,
        "send_video_inline": True,
    }
    runs.RUNS.setdefault(
        "wire", runs.RunSpec("wire", "a stand-in judge's seeded scores", "wire", reward_model)
    )


_register_run()
