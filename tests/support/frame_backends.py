"""A reward backend whose score is read off the last frame, for the audit tests.

Loaded with ``--plugin tests.support.frame_backends``. ``square_position`` finds the red
square of :func:`tests.conftest.moving_square_frames` in the last frame of the video the
server decoded and answers its horizontal position, 0 at the left edge to 1 at the right,
rounded to one decimal (so the codec's noise never moves an answer): a success (the square
slid all the way) scores 1, a video that ends where it started scores 0. It ignores the
instruction, as a careless judge would, so a success judged against another task's
instruction scores as the success does. Every score of an audit is then known in advance.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vlm_reward.backends import RewardBackend, ScoreJob, register_backend
from vlm_reward.video_io import decode_clip, probe_video

SQUARE = 16  # side of the square in moving_square_frames


def square_position(frame: np.ndarray) -> float:
    """The red square's position in ``frame``: 0 (left edge) to 1 (right edge), one decimal;
    0 when the frame has no red square."""
    red = (frame[..., 0] > 180) & (frame[..., 1] < 90) & (frame[..., 2] < 90)
    if not red.any():
        return 0.0
    left = float(np.nonzero(red.any(axis=0))[0].mean()) - (SQUARE - 1) / 2
    return round(min(max(left / (frame.shape[1] - SQUARE), 0.0), 1.0), 1)


@register_backend
class SquarePositionBackend(RewardBackend):
    """Answers the red square's position in the last frame (see the module docstring)."""

    name = "square_position"

    def load(self) -> None:
        pass

    def generate(self, jobs: Sequence[ScoreJob]) -> list[str | Exception]:
        return [f"<answer>{square_position(self._last(job))}</answer>" for job in jobs]

    @staticmethod
    def _last(job: ScoreJob) -> np.ndarray:
        if job.clip is not None:
            return job.clip.last
        probe = probe_video(job.video_path)
        return decode_clip(job.video_path, [probe.num_frames - 1], probe).last
