"""Tests for vlm_reward.server.video_source: root confinement, size limits, decoding, temp cleanup."""

from __future__ import annotations

import base64
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from vlm_reward.errors import (
    InvalidRequestError,
    InvalidVideoError,
    LimitExceededError,
    PayloadTooLargeError,
    RewardServerError,
    VideoNotFoundError,
    VideoOutsideRootError,
)
from vlm_reward.server.limits import RequestLimits
from vlm_reward.server.video_source import VideoPolicy, prepare_video

MAX_MB = 0.25
LIMITS = RequestLimits(max_video_mb=MAX_MB, max_video_frames=16)  # the fixture has exactly 16


@dataclass(frozen=True)
class Layout:
    """A video root with good and bad files, a file outside it, and a separate upload dir."""

    root: Path
    outside: Path
    uploads: Path
    policy: VideoPolicy
    video_bytes: bytes


@pytest.fixture
def layout(tmp_path: Path, sample_mp4: str) -> Layout:
    root, outside, uploads = tmp_path / "root", tmp_path / "outside", tmp_path / "uploads"
    for d in (root, outside, uploads, root / "sub", root / "a_dir"):
        d.mkdir()
    shutil.copy(sample_mp4, root / "episode.mp4")
    shutil.copy(sample_mp4, root / "sub" / "nested.mp4")
    shutil.copy(sample_mp4, outside / "secret.mp4")
    (root / "junk.mp4").write_bytes(b"this is not a video at all" * 10)
    (root / "empty.mp4").write_bytes(b"")
    (root / "big.mp4").write_bytes(b"\0" * (int(MAX_MB * 1024 * 1024) + 1))
    (root / "escape.mp4").symlink_to(outside / "secret.mp4")
    (root / "alias.mp4").symlink_to(root / "episode.mp4")
    policy = VideoPolicy.create(str(root), LIMITS, upload_dir=str(uploads))
    return Layout(root, outside, uploads, policy, Path(sample_mp4).read_bytes())


@pytest.mark.parametrize(
    "video_path",
    ["{root}/episode.mp4", "episode.mp4", "sub/nested.mp4", "sub/../episode.mp4", "alias.mp4"],
    ids=["absolute", "relative-to-root", "subdirectory", "dotdot-staying-inside", "symlink-inside"],
)
def test_path_inside_the_root_is_accepted_and_never_deleted(layout: Layout, video_path: str) -> None:
    video = prepare_video(video_path.format(root=layout.root), None, layout.policy)
    assert video.frames == 16
    assert not video.temporary
    assert Path(video.path).resolve().parent in (layout.root, layout.root / "sub")
    video.cleanup()
    assert os.path.exists(video.path)


@pytest.mark.parametrize(
    ("video_path", "error", "message"),
    [
        ("{outside}/secret.mp4", VideoOutsideRootError, "outside the server's --video-root"),
        ("../outside/secret.mp4", VideoOutsideRootError, "outside"),
        ("sub/../../outside/secret.mp4", VideoOutsideRootError, "outside"),
        ("escape.mp4", VideoOutsideRootError, "symlinks"),
        ("{outside}/does-not-exist.mp4", VideoOutsideRootError, "outside"),
        ("/", VideoOutsideRootError, "outside"),
        ("missing.mp4", VideoNotFoundError, "does not exist"),
        ("a_dir", InvalidVideoError, "not a regular file"),
        ("empty.mp4", InvalidVideoError, "empty"),
        ("junk.mp4", InvalidVideoError, "cannot be decoded"),
        ("big.mp4", PayloadTooLargeError, "--max-video-mb"),
        ("epi\x00sode.mp4", InvalidRequestError, "NUL"),
    ],
    ids=[
        "absolute-outside",
        "dotdot-escape",
        "nested-dotdot-escape",
        "symlink-escape",
        "missing-outside-is-403-not-404",
        "filesystem-root",
        "missing-inside",
        "directory",
        "empty-file",
        "not-a-video",
        "over-size-limit",
        "nul-byte",
    ],
)
def test_bad_video_path_raises_the_documented_error(
    layout: Layout, video_path: str, error: type[RewardServerError], message: str
) -> None:
    path = video_path.format(outside=layout.outside)
    with pytest.raises(error, match=message) as info:
        prepare_video(path, None, layout.policy)
    # The message must not reveal where the server keeps its files.
    assert str(layout.root) not in info.value.message
    assert str(layout.outside) not in info.value.message


def test_root_given_through_a_symlink_still_confines(layout: Layout, tmp_path: Path) -> None:
    link = tmp_path / "root-link"
    link.symlink_to(layout.root, target_is_directory=True)
    policy = VideoPolicy.create(str(link), LIMITS)
    assert prepare_video(str(link / "episode.mp4"), None, policy).frames == 16
    with pytest.raises(VideoOutsideRootError):
        prepare_video(str(link / "escape.mp4"), None, policy)


def test_inline_video_is_written_to_a_temp_file_that_cleanup_removes(layout: Layout) -> None:
    video = prepare_video(None, base64.b64encode(layout.video_bytes).decode(), layout.policy)
    assert video.temporary and video.frames == 16
    assert Path(video.path).parent == layout.uploads
    assert Path(video.path).read_bytes() == layout.video_bytes
    video.cleanup()
    video.cleanup()  # idempotent
    assert not os.path.exists(video.path)


@pytest.mark.parametrize(
    ("payload", "error", "message"),
    [
        ("not base64!!", InvalidRequestError, "not valid base64"),
        ("QUJD\nREVG", InvalidRequestError, "not valid base64"),
        ("QUJ", InvalidRequestError, "not valid base64"),
        ("ünïcode", InvalidRequestError, "not valid base64"),
        ("", InvalidVideoError, "empty"),
        (base64.b64encode(b"definitely not an mp4").decode(), InvalidVideoError, "cannot be decoded"),
        ("A" * 400_000, PayloadTooLargeError, "inline video"),
    ],
    ids=["bad-chars", "line-break", "bad-padding", "non-ascii", "empty", "not-a-video", "over-size-limit"],
)
def test_bad_inline_video_raises_and_leaves_no_temp_file(
    layout: Layout, payload: str, error: type[RewardServerError], message: str
) -> None:
    with pytest.raises(error, match=message):
        prepare_video(None, payload, layout.policy)
    assert list(layout.uploads.iterdir()) == []


@pytest.mark.parametrize(
    ("video_path", "video_b64"), [(None, None), ("episode.mp4", "AAAA")], ids=["neither", "both"]
)
def test_exactly_one_source_is_required(
    layout: Layout, video_path: str | None, video_b64: str | None
) -> None:
    with pytest.raises(InvalidRequestError, match="exactly one"):
        prepare_video(video_path, video_b64, layout.policy)


def test_a_missing_root_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not an existing directory"):
        VideoPolicy.create(str(tmp_path / "nope"), LIMITS)


@pytest.mark.parametrize("source", ["path", "inline"])
def test_a_video_over_the_frame_cap_is_refused(layout: Layout, source: str) -> None:
    policy = VideoPolicy.create(str(layout.root), RequestLimits(max_video_frames=15), str(layout.uploads))
    b64 = base64.b64encode(layout.video_bytes).decode()
    args = ("episode.mp4", None) if source == "path" else (None, b64)
    with pytest.raises(
        LimitExceededError, match=r"frame count is 16, above .* limit of 15 \(--max-video-frames\)"
    ):
        prepare_video(*args, policy)
    assert list(layout.uploads.iterdir()) == []
