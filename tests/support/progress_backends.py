"""A reward backend whose score depends on how many frames the video has, for the VOC tests.

Loaded with ``--plugin tests.support.progress_backends``. ``frame_table`` answers
``<answer>S</answer>`` where ``S = scores[task_text][str(total_frames)]``, ``total_frames``
being the frame count of the video the server decoded (a prefix of a kept video has
fewer). A (task, frame count) the table lacks fails that job (the client's fallback), so a
test can place a failed call exactly. Every score of ``rescore --prefixes`` is then known
in advance, and so is each episode's VOC.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vlm_reward.backends import RewardBackend, ScoreJob, register_backend
from vlm_reward.video_io import probe_video


@register_backend
class FrameTableBackend(RewardBackend):
    """Answers ``scores[task_text][str(total_frames)]``; a missing entry fails the job."""

    name = "frame_table"

    def __init__(self, model: str, scores: Mapping[str, Mapping[str, float]]) -> None:
        super().__init__(model)
        if not isinstance(scores, Mapping) or not all(isinstance(v, Mapping) for v in scores.values()):
            raise ValueError('scores must map task text to {"<frame count>": score}.')
        self.scores = {task: dict(table) for task, table in scores.items()}

    def load(self) -> None:
        pass

    def generate(self, jobs: Sequence[ScoreJob]) -> list[str | Exception]:
        return [self._answer(job) for job in jobs]

    def _answer(self, job: ScoreJob) -> str | Exception:
        total = job.clip.total_frames if job.clip is not None else probe_video(job.video_path).num_frames
        try:
            return f"<answer>{self.scores[job.task_text][str(total)]}</answer>"
        except KeyError:
            return LookupError(f"no score for task {job.task_text!r} at {total} frames")
