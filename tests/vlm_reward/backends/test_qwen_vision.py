"""qwen_vision.video_input: the server's resize gives qwen-vl-utils' pixels, bit for bit.

qwen-vl-utils resizes the decoded uint8 frames (channels last in memory, as its readers permute
them) with torchvision and takes the result as float; ``video_input`` resizes contiguous float32
frames and rounds (issue 43: about half the time on a CPU, benchmark 14b). The reference here is
qwen-vl-utils' own call on the same frames, so the test fails if the two ever round apart.
"""

from __future__ import annotations

import numpy as np
import pytest

from vlm_reward.judging.model_family import QWEN2_5_VL, QWEN3_VL, ModelFamily
from vlm_reward.video_io import Clip


def _reference(frames: np.ndarray, size: tuple[int, int]):
    """qwen-vl-utils' resize (``fetch_video``) of the frames to ``size``."""
    import torch
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms import functional as tf

    video = torch.from_numpy(frames).permute(0, 3, 1, 2)
    return tf.resize(video, list(size), interpolation=InterpolationMode.BICUBIC, antialias=True).float()


@pytest.mark.parametrize(
    ("family", "side", "native", "expected"),
    [
        (QWEN2_5_VL, 256, False, 336),  # upscaled to the video pixel floor (the default request)
        (QWEN2_5_VL, 256, True, 252),  # downscaled to whole tokens
        (QWEN2_5_VL, 128, True, 140),
        (QWEN3_VL, 256, False, 384),
        (QWEN3_VL, 256, True, 256),  # no resize at all
        (QWEN3_VL, 640, False, 448),  # capped
    ],
    ids=["q25-up", "q25-down", "q25-small", "q3-up", "q3-same", "q3-large"],
)
def test_the_resize_gives_qwen_vl_utils_pixels(
    family: ModelFamily, side: int, native: bool, expected: int
) -> None:
    import torch

    from vlm_reward.backends.qwen_vision import _import_qwen_vl_utils, video_input

    frames = np.random.default_rng(side).integers(0, 256, (4, side, side, 3), dtype=np.uint8)
    clip = Clip(frames, tuple(range(4)), 4, 4.0, frames[0], frames[-1])
    video, _ = video_input(clip, {"max_pixels": 200704}, _import_qwen_vl_utils(), family, native)
    assert tuple(video.shape) == (4, 3, expected, expected)
    assert video.dtype == torch.float32
    assert torch.equal(video, _reference(frames, (expected, expected)))
