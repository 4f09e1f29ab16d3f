"""``native_frame_size``: frames at their own size in whole tokens, not upscaled to the video floor.

The resize itself (qwen_vision.video_input), for both families, against the reference sizes; the
prompt a native request makes, against the default one, on both tiny checkpoints; and the setting
carried by every hop of a request: the env's client payload, the server's job, the fine-tune's job.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vlm_reward.backends import ScoreJob
from vlm_reward.judging.model_family import QWEN2_5_VL, QWEN3_VL, ModelFamily
from vlm_reward.video_io import Clip, encode_mp4

ENV_PIXELS = 200704  # the env's default max_pixels


def _clip(side: int, frames: int = 4) -> Clip:
    pixels = np.zeros((frames, side, side, 3), np.uint8)
    return Clip(pixels, tuple(range(frames)), frames, 4.0, pixels[0], pixels[-1])


@pytest.mark.parametrize(
    ("family", "side", "max_pixels", "native", "expected"),
    [
        (QWEN2_5_VL, 256, ENV_PIXELS, False, 336),  # the reference preprocessing's 128-token floor
        (QWEN2_5_VL, 256, ENV_PIXELS, True, 252),  # 9 tokens of 28 px
        (QWEN2_5_VL, 128, ENV_PIXELS, True, 140),  # the nearest whole tokens: 5
        (QWEN2_5_VL, 256, 112 * 112, True, 112),  # max_pixels still caps
        (QWEN2_5_VL, 640, ENV_PIXELS, True, 448),  # a large frame is capped either way
        (QWEN3_VL, 256, ENV_PIXELS, False, 384),
        (QWEN3_VL, 256, ENV_PIXELS, True, 256),  # 8 tokens of 32 px: LIBERO's frames as they are
        (QWEN3_VL, 640, ENV_PIXELS, False, 448),
    ],
    ids=["q25-256", "q25-256-native", "q25-128-native", "q25-capped", "q25-large-native", "q3-256",
         "q3-256-native", "q3-large"],
)  # fmt: skip
def test_frames_keep_their_size_in_whole_tokens(
    family: ModelFamily, side: int, max_pixels: int, native: bool, expected: int
) -> None:
    from vlm_reward.backends.qwen_vision import _import_qwen_vl_utils, video_input

    video, _ = video_input(_clip(side), {"max_pixels": max_pixels}, _import_qwen_vl_utils(), family, native)
    assert tuple(video.shape[2:]) == (expected, expected)


@pytest.fixture(scope="module")
def libero_sized_mp4(tmp_path_factory: pytest.TempPathFactory) -> str:
    """16 frames of 256x256, LIBERO's render size."""
    path = tmp_path_factory.mktemp("native") / "episode.mp4"
    pixels = np.random.default_rng(0).integers(0, 256, (16, 256, 256, 3), dtype=np.uint8)
    encode_mp4(pixels, path, fps=4)
    return str(path)


@pytest.mark.parametrize(
    ("name", "video_tokens"),
    # Per frame pair of 16 frames: (side / token)^2 tokens; 8 pairs.
    [("tiny_qwen_checkpoint", (8 * 12 * 12, 8 * 9 * 9)), ("tiny_qwen3_checkpoint", (8 * 12 * 12, 8 * 8 * 8))],
    ids=["qwen2_5_vl", "qwen3_vl"],
)
def test_a_native_request_costs_the_tokens_of_its_own_frames(
    request: pytest.FixtureRequest, libero_sized_mp4: str, name: str, video_tokens: tuple[int, int]
) -> None:
    from vlm_reward.backends.qwen_vl_hf import QwenHFBackend

    backend = QwenHFBackend(request.getfixturevalue(name))
    backend.load()
    try:
        lengths = [
            backend.prepare(ScoreJob("t", libero_sized_mp4, 16, ENV_PIXELS, 4.0, native_frame_size=native))
            .inputs["input_ids"]
            .shape[1]
            for native in (False, True)
        ]
    finally:
        backend.close()
    assert lengths[0] - lengths[1] == video_tokens[0] - video_tokens[1]


def test_the_client_sends_the_setting_only_when_on(tmp_path: Path) -> None:
    """Off, the body is what it was before the setting (a server older than it refuses unknown fields)."""
    from vlm_reward.client.config import RewardModelConfig
    from vlm_reward.client.scoring import RewardClient

    video = tmp_path / "v.mp4"
    video.write_bytes(b"")
    bodies = []
    for native in (False, True):
        client = RewardClient(RewardModelConfig(enable=True, native_frame_size=native))
        try:
            bodies.append(client._payload("t", str(video), 8))
        finally:
            client.close()
    assert "native_frame_size" not in bodies[0] and bodies[1]["native_frame_size"] is True


def test_the_server_s_job_and_the_fine_tune_s_job_carry_it(tmp_path: Path) -> None:
    from reward_eval.finetune.inputs import Request
    from vlm_reward.protocol import ScoreRequest
    from vlm_reward.server.job import make_job
    from vlm_reward.server.video_source import LocalVideo

    request = ScoreRequest(task_text="t", video_path="v.mp4", native_frame_size=True)
    assert make_job(
        request, LocalVideo(str(tmp_path / "v.mp4"), False, _clip(64)), "probability"
    ).native_frame_size
    finetune = Request(8, ENV_PIXELS, 4.0, native_frame_size=True)
    assert finetune.job("t", "v.mp4", 16).native_frame_size and finetune.asked()["native_frame_size"] is True
