"""vlm_reward.video_io: the encoder is reproducible, and bad input is refused in one sentence."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import moving_square_frames
from vlm_reward.video_io import decode_clip, encode_mp4, probe_video

CALLS = 30  # the encoder before issue 53 gave 11 distinct files in 100 such calls here


def test_the_same_frames_give_the_same_bytes(tmp_path: Path) -> None:
    """Frames decoded from an MP4 (as the fine-tune's counterfactuals re-encode them), encoded
    again and again with their reverse and other allocations in between: one file every time."""
    source = tmp_path / "source.mp4"
    encode_mp4(moving_square_frames(12, 64), source, fps=4)
    frames = decode_clip(source, range(12), probe_video(source)).frames
    rng = np.random.default_rng(0)
    heap: list[bytes] = []
    digests = set()
    for call in range(CALLS):
        heap.append(rng.bytes(int(rng.integers(1_000, 200_000))))
        if call % 3 == 0:
            encode_mp4(frames[::-1].copy(), tmp_path / "reversed.mp4", fps=4)
        encode_mp4(frames, tmp_path / "again.mp4", fps=4)
        digests.add(hashlib.sha256((tmp_path / "again.mp4").read_bytes()).hexdigest())
    assert len(digests) == 1, f"{len(digests)} different files from {CALLS} encodes of the same frames"


@pytest.mark.parametrize(
    ("frames", "fps", "message"),
    [
        (np.zeros((0, 8, 8, 3), np.uint8), 4, "no frames"),
        (np.zeros((2, 8, 8), np.uint8), 4, "frames must be uint8 of shape (T, H, W, 3)"),
        (np.zeros((2, 8, 8, 3), np.float32), 4, "frames must be uint8 of shape (T, H, W, 3)"),
        (np.zeros((2, 8, 8, 3), np.uint8), 0, "fps must be positive"),
    ],
    ids=["empty", "no-channels", "float", "zero-fps"],
)
def test_bad_input_is_refused(tmp_path: Path, frames: np.ndarray, fps: float, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        encode_mp4(frames, tmp_path / "x.mp4", fps=fps)


def test_odd_sizes_are_padded_not_resized(tmp_path: Path) -> None:
    encode_mp4(moving_square_frames(4, 64)[:, :63, :61], tmp_path / "odd.mp4", fps=4)
    clip = decode_clip(tmp_path / "odd.mp4", range(4))
    assert clip.frames.shape == (4, 64, 62, 3)
