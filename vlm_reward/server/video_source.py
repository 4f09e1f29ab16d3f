"""Turn a request's ``video_path`` or ``video_b64`` into a validated MP4 on local disk.

Two threats shape this module. A ``video_path`` is a path chosen by the client on the
server's disk, so it is confined to ``--video-root`` after resolving ``..`` and symlinks
(``os.path.realpath``), otherwise any readable file would be an oracle. An inline video is
client bytes of any size, so it is size-checked before it is decoded and written to a temp
file that is removed when the request ends, whatever happens.

Every video is decoded exactly once, here, before it reaches a backend
(:func:`vlm_reward.video_io.decode_clip`): junk bytes, empty and corrupt clips are a 400
naming the problem instead of a 500 from deep inside a model, and the backend gets the
decoded frames it asked for (:meth:`~vlm_reward.backends.base.RewardBackend.frame_indices`)
plus the first and last, never reading the file again. The frame count comes from the
container first, so a small file of many tiny frames is refused (``--max-video-frames``)
before anything is decoded.
Errors never name host paths: the client knows which path it sent.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from vlm_reward.errors import (
    InvalidRequestError,
    InvalidVideoError,
    PayloadTooLargeError,
    VideoNotFoundError,
    VideoOutsideRootError,
)
from vlm_reward.server.limits import RequestLimits
from vlm_reward.video_io import Clip, decode_clip, probe_video

_MB = 1024 * 1024


@dataclass(frozen=True)
class VideoPolicy:
    """Where videos may come from and how big they may be.

    ``root`` is stored resolved (realpath), so the containment check compares like with
    like even when the configured root itself is a symlink. ``upload_dir`` is where inline
    videos are written (default: the system temp dir). Sizes come from the server's
    :class:`~vlm_reward.server.limits.RequestLimits`.
    """

    root: str
    limits: RequestLimits
    upload_dir: str | None = None

    @classmethod
    def create(cls, root: str, limits: RequestLimits, upload_dir: str | None = None) -> VideoPolicy:
        """Validate the server settings; ``ValueError`` names the bad one."""
        if not os.path.isdir(root):
            raise ValueError(f"--video-root {root!r} is not an existing directory.")
        return cls(os.path.realpath(root), limits, upload_dir)

    @property
    def max_bytes(self) -> int:
        """Largest video file, inline (decoded) or by path."""
        return int(self.limits.max_video_mb * _MB)


# Which frames of a video of N frames a backend shows the model (see RewardBackend.frame_indices).
FrameIndices = Callable[[int], Sequence[int]]


def _every_frame(total: int) -> Sequence[int]:
    return range(total)


@dataclass
class LocalVideo:
    """A validated video and its decoded frames; ``cleanup`` deletes the file if the server wrote it."""

    path: str
    temporary: bool
    clip: Clip

    @property
    def frames(self) -> int:
        """Number of frames in the file."""
        return self.clip.total_frames

    def cleanup(self) -> None:
        """Remove an inline upload's temp file (idempotent; never touches client files)."""
        if self.temporary:
            _remove_quietly(self.path)
            self.temporary = False


def prepare_video(
    video_path: str | None,
    video_b64: str | None,
    policy: VideoPolicy,
    frame_indices: FrameIndices = _every_frame,
) -> LocalVideo:
    """Resolve exactly one of ``video_path``/``video_b64`` into a local video, decoded once.

    ``frame_indices(total_frames)`` says which frames to keep (the backend's choice).
    Raises the :mod:`vlm_reward.errors` exception for the status the protocol specifies:
    403 outside the root, 413 too large, 422 too many frames, 400 missing/undecodable/
    empty/bad base64 or too short for the backend. The caller must call
    :meth:`LocalVideo.cleanup` when the request is done.
    """
    if (video_path is None) == (video_b64 is None):
        raise InvalidRequestError("give exactly one of video_path or video_b64.")
    if video_path is not None:
        path = resolve_video_path(video_path, policy)
        return LocalVideo(path, temporary=False, clip=decode_checked(path, policy.limits, frame_indices))
    path = write_inline_video(video_b64 or "", policy)
    try:
        return LocalVideo(path, temporary=True, clip=decode_checked(path, policy.limits, frame_indices))
    except BaseException:
        _remove_quietly(path)
        raise


def resolve_video_path(video_path: str, policy: VideoPolicy) -> str:
    """The real path of ``video_path`` (relative paths are relative to the root), if allowed.

    Containment is checked before existence, so a client cannot probe which files exist
    outside the root.
    """
    if "\x00" in video_path:
        raise InvalidRequestError("video_path contains a NUL character.")
    real = os.path.realpath(os.path.join(policy.root, video_path))
    if os.path.commonpath([policy.root, real]) != policy.root:
        raise VideoOutsideRootError(
            "video_path resolves outside the server's --video-root (after following '..' and "
            "symlinks); write the video under that directory or send it inline as video_b64."
        )
    if not os.path.exists(real):
        raise VideoNotFoundError(
            "video_path does not exist on the server; the server reads it from its own disk, "
            "so use a shared directory under --video-root or send the video inline as video_b64."
        )
    if not os.path.isfile(real):
        raise InvalidVideoError("video_path is not a regular file.")
    _check_size(os.path.getsize(real), policy, "the video file")
    return real


def write_inline_video(video_b64: str, policy: VideoPolicy) -> str:
    """Decode ``video_b64`` into a new temp ``.mp4`` and return its path (caller removes it)."""
    # Base64 is 4 chars per 3 bytes: reject oversized uploads before allocating the bytes.
    _check_size(len(video_b64) * 3 // 4, policy, "the inline video (video_b64)")
    try:
        data = base64.b64decode(video_b64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequestError(
            f"video_b64 is not valid base64 ({exc}); send the MP4 bytes base64-encoded "
            "(standard alphabet, with padding, no line breaks)."
        ) from None
    if not data:
        raise InvalidVideoError("video_b64 decodes to an empty file.")
    fd, path = tempfile.mkstemp(prefix="vlm-reward-upload-", suffix=".mp4", dir=policy.upload_dir)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except BaseException:
        _remove_quietly(path)
        raise
    return path


def decode_checked(path: str, limits: RequestLimits, frame_indices: FrameIndices = _every_frame) -> Clip:
    """The clip of ``path``; ``InvalidVideoError`` for empty, undecodable or frameless files.

    ``LimitExceededError`` (422) for more than ``limits.max_video_frames`` frames, told from
    the container before any frame is decoded.
    """
    if os.path.getsize(path) == 0:
        raise InvalidVideoError("the video file is empty (0 bytes).")
    try:
        probe = probe_video(path)
    except ValueError as exc:
        raise InvalidVideoError(f"the video cannot be decoded: {exc}") from None
    if probe.num_frames == 0:
        raise InvalidVideoError("the video has no decodable frames.")
    limits.check_video_frames(probe.num_frames)
    try:
        indices = frame_indices(probe.num_frames)
    except ValueError as exc:  # e.g. a backend that needs more frames than the video has
        raise InvalidVideoError(str(exc)) from None
    try:
        return decode_clip(path, indices, probe)
    except ValueError as exc:
        raise InvalidVideoError(f"the video cannot be decoded: {exc}") from None


def _check_size(n_bytes: int, policy: VideoPolicy, what: str) -> None:
    if n_bytes > policy.max_bytes:
        raise PayloadTooLargeError(
            f"{what} is {n_bytes / _MB:.2f} MB; this server accepts at most "
            f"{policy.max_bytes / _MB:.2f} MB (--max-video-mb)."
        )


def _remove_quietly(path: str) -> None:
    # Cleanup must not mask the error being reported (or fail a request that succeeded).
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
