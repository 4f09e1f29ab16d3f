"""MP4 encoding, probing and decoding shared by the reward client and the server.

Frames are ``uint8`` RGB arrays of shape ``(T, H, W, 3)``. Videos are H.264 in yuv420p,
which needs even sizes; odd sizes are padded by one edge pixel rather than resized so
the VLM sees the frames as the policy did.

The server reads each video once: :func:`probe_video` counts its frames from the container
(demuxing, no decoding: cheap, so a cap on the count costs nothing), then
:func:`decode_clip` decodes every frame once, which proves the file decodes, and keeps only
the frames a backend will show the model plus the first and the last (PRIMO-R1 shows
those as images). Memory is then bounded by what the model sees, not by the file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

# libx264's settings. crf 17 and preset veryfast: near-lossless and fast (the files live for one
# request, and the judge should not see compression artefacts the policy never saw). No macroblock
# tree: with it, the same frames gave different files from one call to the next here (11 of 100
# calls differed on a 2-core EPYC, with one thread too); without it, the same bytes every time.
# One thread: as fast or faster for the project's clips on a busy 2-core machine.
# benchmarks/bench_encode.py measures both.
X264_OPTIONS = {"crf": "17", "preset": "veryfast", "x264-params": "mbtree=0"}
ENCODER_THREADS = 1


def _even_pad(frames: np.ndarray) -> np.ndarray:
    pad_h, pad_w = frames.shape[1] % 2, frames.shape[2] % 2
    if not (pad_h or pad_w):
        return frames
    return np.pad(frames, ((0, 0), (0, pad_h), (0, pad_w), (0, 0)), mode="edge")


def encode_mp4(frames: np.ndarray, path: str | os.PathLike[str], fps: float) -> None:
    """Write ``frames`` to ``path`` as an H.264 MP4 at ``fps`` frames per second; the same frames
    give the same bytes (:data:`X264_OPTIONS`).

    Raises ``ValueError`` for an empty clip, a wrong shape/dtype or a non-positive fps.
    """
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise ValueError(f"frames must be uint8 of shape (T, H, W, 3), got {frames.dtype} {frames.shape}.")
    if len(frames) == 0:
        raise ValueError("cannot encode a video with no frames.")
    if not fps > 0:
        raise ValueError(f"fps must be positive, got {fps}.")
    import av

    frames = _even_pad(frames)
    with av.open(os.fspath(path), mode="w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=Fraction(fps).limit_denominator(1000))
        stream.height, stream.width = frames.shape[1:3]
        stream.pix_fmt = "yuv420p"
        stream.options = dict(X264_OPTIONS)
        stream.thread_count = ENCODER_THREADS
        for frame in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode())


@dataclass(frozen=True)
class VideoProbe:
    """What the container says: the number of video frames (packets) and the frame rate."""

    num_frames: int
    fps: float


@dataclass(frozen=True, eq=False)
class Clip:
    """Frames decoded once from a video file.

    ``frames[i]`` is frame ``indices[i]`` of the file's ``total_frames``; ``first`` and
    ``last`` are its first and last frame; ``fps`` is the file's frame rate.
    """

    frames: np.ndarray
    indices: tuple[int, ...]
    total_frames: int
    fps: float
    first: np.ndarray
    last: np.ndarray


def probe_video(path: str | os.PathLike[str]) -> VideoProbe:
    """Frame count and rate from the container alone; ``ValueError`` if it holds no video."""
    import av

    try:
        with av.open(os.fspath(path)) as container:
            if not container.streams.video:
                raise ValueError("the file has no video stream.")
            stream = container.streams.video[0]
            count = sum(1 for packet in container.demux(stream) if packet.size)
            rate = stream.average_rate or stream.guessed_rate or stream.base_rate
            return VideoProbe(count, float(rate) if rate else 0.0)
    except av.error.FFmpegError as exc:
        raise ValueError(f"not a readable video: {exc.strerror or type(exc).__name__}.") from exc


def decode_clip(
    path: str | os.PathLike[str], indices: Iterable[int], probe: VideoProbe | None = None
) -> Clip:
    """Decode every frame of ``path`` once, keeping the frames at ``indices`` (sorted, unique).

    ``ValueError`` if the file does not decode, if it decodes to a different number of
    frames than its container lists (a truncated or corrupt stream), or if an index is out
    of range.
    """
    import av

    probe = probe or probe_video(path)
    wanted = sorted(set(indices))
    if wanted and not 0 <= wanted[0] <= wanted[-1] < probe.num_frames:
        raise ValueError(f"frame indices {wanted} are outside the video's {probe.num_frames} frames.")
    keep = {*wanted, 0, probe.num_frames - 1}
    kept: dict[int, np.ndarray] = {}
    count = 0
    try:
        with av.open(os.fspath(path)) as container:
            for count, frame in enumerate(container.decode(video=0), start=1):
                if count - 1 in keep:
                    kept[count - 1] = frame.to_ndarray(format="rgb24")
    except av.error.FFmpegError as exc:
        raise ValueError(f"not a readable video: {exc.strerror or type(exc).__name__}.") from exc
    if count != probe.num_frames or not kept:
        raise ValueError(f"the video decodes to {count} frames but its container lists {probe.num_frames}.")
    frames = np.stack([kept[i] for i in wanted]) if wanted else np.empty((0, 0, 0, 3), np.uint8)
    return Clip(frames, tuple(wanted), probe.num_frames, probe.fps, kept[0], kept[probe.num_frames - 1])
