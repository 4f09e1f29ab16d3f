"""How many frames a video file decodes to: what the tests (and their server plugins) check of a
clip the client wrote or the server was sent. The product never needs it: the server counts from
the container (:func:`vlm_reward.video_io.probe_video`) and decodes once (``decode_clip``)."""

from __future__ import annotations

import os

import av


def count_frames(path: str | os.PathLike[str]) -> int:
    """Number of decodable video frames in ``path``; ``ValueError`` if it is not a readable video."""
    try:
        with av.open(os.fspath(path)) as container:
            if not container.streams.video:
                raise ValueError("the file has no video stream.")
            return sum(1 for _ in container.decode(video=0))
    except av.error.FFmpegError as exc:
        raise ValueError(f"not a readable video: {exc.strerror or type(exc).__name__}.") from exc
