"""A judge that records what it is asked, for the flow-through test: ``--plugin tests.support.wire_backends``.

The ``wire_recorder`` backend runs inside the real reward server, so a request reaches it
exactly as the server parsed it off the wire; it appends one JSON line per job to ``log_path``
(server kwarg) with the request fields that change what a judge is asked (nframes, max_pixels,
video_fps, native_frame_size, score_mode, backend_kwargs), the instruction and the frame count of
the video it got, and answers a fixed score in whatever mode the job asks for (0.7; 0.5 in rubric mode; the
probability mode included), so every
command's path completes. It accepts any ``backend_kwargs``: it records them instead of checking.
:class:`WireRecorder` runs such a server for a test.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.support.video_frames import count_frames
from vlm_reward.backends import ProbabilityAnswer, RewardBackend, ScoreJob, register_backend
from vlm_reward.protocol import SCORE_MODES

# A text each text mode reads as a score (rubric: "ANSWER: n" on its 1-5 scale, 3 -> 0.5).
TEXT_ANSWERS = {"auto": "0.7", "percentage": "70%", "unit": "0.7", "rubric": "ANSWER: 3"}
RECORDED = ("nframes", "max_pixels", "video_fps", "native_frame_size", "score_mode", "backend_kwargs")


@register_backend
class WireRecorderBackend(RewardBackend):
    """Records each job's judge-facing request fields; answers 0.7 (rubric: 3 of 5, 0.5) in any mode."""

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


class WireRecorder:
    """A reward server on 127.0.0.1 running ``wire_recorder``: the stand-in judge of the flow-through
    test. :meth:`take` returns the jobs it recorded since the last call, so one server serves
    several paths run one after another."""

    def __init__(self, log_dir: Path, video_root: Path) -> None:
        from tests.support.server import ServerProcess

        self.log = log_dir / "wire_jobs.jsonl"
        args = ["--backend", "wire_recorder", "--model", "none", "--video-root", str(video_root)]
        args += ["--backend-kwargs", json.dumps({"log_path": str(self.log)})]
        self.server = ServerProcess(args, log_dir / "wire_server.log", plugins=(__name__,))
        self.server.wait_ready()
        self.endpoint = self.server.endpoint
        self._seen = 0

    def take(self) -> list[dict[str, Any]]:
        """The jobs recorded since the last :meth:`take`, oldest first."""
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        new, self._seen = lines[self._seen :], len(lines)
        return [json.loads(line) for line in new]

    def stop(self) -> None:
        self.server.stop()
