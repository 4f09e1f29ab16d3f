"""A judge that records what it is asked, for the flow-through test: ``--plugin tests.support.wire_backends``.

The ``wire_recorder`` backend runs inside the real reward server, so a request reaches it
exactly as the server parsed it off the wire; it appends one JSON line per job to ``log_path``
(server kwarg) with the request fields that change what a judge is asked (nframes, max_pixels,
video_fps, score_mode, backend_kwargs), the instruction and the frame count of the video it got,
and answers a fixed score in whatever mode the job asks for (probability included), so every
command's path completes. It accepts any ``backend_kwargs``: it records them instead of checking.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence

from vlm_reward.backends import ProbabilityAnswer, RewardBackend, ScoreJob, register_backend
from vlm_reward.protocol import SCORE_MODES
from vlm_reward.video_io import count_frames

# A text each text mode reads as a score (rubric: "ANSWER: n" on its 1-5 scale).
TEXT_ANSWERS = {"auto": "0.7", "percentage": "70%", "unit": "0.7", "rubric": "ANSWER: 4"}
RECORDED = ("nframes", "max_pixels", "video_fps", "score_mode", "backend_kwargs")


@register_backend
class WireRecorderBackend(RewardBackend):
    """Records each job's judge-facing request fields; answers 0.7 (rubric: 4 of 5) in any mode."""

    name = "wire_recorder"
    default_score_mode = "unit"
    score_modes = SCORE_MODES

    def __init__(self, model: str, log_path: str) -> None:
        super().__init__(model)
        self.log_path = log_path
        self._lock = threading.Lock()

    def load(self) -> None:
        open(self.log_path, "a").close()

    def generate(self, jobs: Sequence[ScoreJob]) -> list[str | ProbabilityAnswer | Exception]:
        lines = [
            {
                **{key: getattr(job, key) for key in RECORDED},
                "task_text": job.task_text,
                "video_frames": count_frames(job.video_path),
            }
            for job in jobs
        ]
        with self._lock, open(self.log_path, "a") as log:
            log.writelines(json.dumps(line) + "\n" for line in lines)
        return [self._answer(job) for job in jobs]

    @staticmethod
    def _answer(job: ScoreJob) -> str | ProbabilityAnswer:
        if job.score_mode == "probability":
            return ProbabilityAnswer(0.7, "yes")
        return TEXT_ANSWERS[str(job.score_mode)]
