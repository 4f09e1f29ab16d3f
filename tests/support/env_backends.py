"""A reward backend for the env tests: a known answer, and a record of every job it saw.

Loaded with ``--plugin tests.support.env_backends``. Server kwargs: ``log_path`` (JSONL,
one line per job: task, number of frames in the video it received, time of the call),
``answer`` (default answer), ``generate_seconds`` (latency per call), ``start_log`` (optional
file that gets one line per job the moment it starts, so a test can act while the job is
in flight). Per request, ``backend_kwargs={"answer": ...}`` overrides the answer, and
``backend_kwargs={"answers": {task_text: answer}}`` answers by the instruction: a judge a policy
can fool, since whatever a clip shows (a success, or a canary made from it: played backwards,
frozen, cut short), an instruction it says "yes" to gets a "yes".
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence

from tests.support.video_frames import count_frames
from vlm_reward.backends import RewardBackend, ScoreJob, register_backend


@register_backend
class RecordingBackend(RewardBackend):
    """Answers a fixed text and logs each job's task and received frame count."""

    name = "recording"

    def __init__(
        self,
        model: str,
        log_path: str,
        answer: str = "<answer>0.7</answer>",
        generate_seconds: float = 0.0,
        start_log: str | None = None,
    ) -> None:
        super().__init__(model)
        self.log_path, self.answer, self.generate_seconds = log_path, answer, generate_seconds
        self.start_log = start_log
        self._lock = threading.Lock()

    def load(self) -> None:
        open(self.log_path, "a").close()

    def generate(self, jobs: Sequence[ScoreJob]) -> list[str | Exception]:
        started = time.time()
        if self.start_log is not None:
            with self._lock, open(self.start_log, "a") as log:
                log.writelines(json.dumps({"task": j.task_text}) + "\n" for j in jobs)
        time.sleep(self.generate_seconds)
        lines = [
            {"task": j.task_text, "frames": count_frames(j.video_path), "start": started, "end": time.time()}
            for j in jobs
        ]
        with self._lock, open(self.log_path, "a") as log:
            log.writelines(json.dumps(line) + "\n" for line in lines)
        return [self._answer(j) for j in jobs]

    def _answer(self, job: ScoreJob) -> str:
        by_task = job.backend_kwargs.get("answers", {})
        return str(by_task.get(job.task_text, job.backend_kwargs.get("answer", self.answer)))
