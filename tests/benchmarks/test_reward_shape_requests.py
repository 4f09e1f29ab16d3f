"""Benchmark 14's requests (benchmarks.reward_shape_requests): which frames each way of asking sends."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest

from benchmarks import bench_rlinf_reward_shape as bench
from benchmarks import reward_shape_requests as requests_of
from benchmarks import rlinf_api_request as peer
from benchmarks.two_view_episodes import Episode
from vlm_reward.protocol import DEFAULT_NFRAMES, ScoreRequest

STEPS = 64  # 8 chunks of 8 actions


def _episode(task: str = "put the bowl in the basket") -> Episode:
    """Frames whose pixels say which step they are (the wrist view's 100 above the main view's)."""
    return Episode(
        task,
        {
            "main_images": [np.full((16, 16, 3), step, np.uint8) for step in range(STEPS)],
            "wrist_images": [np.full((16, 16, 3), 100 + step, np.uint8) for step in range(STEPS)],
        },
    )


def _steps_shown(body: dict) -> list[int]:
    from PIL import Image

    urls = [item["image_url"]["url"] for item in body["messages"][0]["content"][:-1]]
    return [
        int(np.median(np.asarray(Image.open(io.BytesIO(base64.b64decode(u.split(",", 1)[1])))))) for u in urls
    ]


@pytest.mark.parametrize(
    ("buffer", "bursts", "first"),
    [
        # From the 5th chunk end on, the latest 5 (the newest frame of chunks 1-5), main then wrist.
        (peer.PER_CHUNK, 4, [7, 15, 23, 31, 39, 107, 115, 123, 131, 139]),
        (peer.per_episode(STEPS // 8), 1, [31, 39, 47, 55, 63, 131, 139, 147, 155, 163]),
    ],
    ids=["per-chunk", "per-episode"],
)
def test_rlinf_s_buffer_sends_chunk_ends_of_both_views(
    buffer: peer.HistoryBuffer, bursts: int, first: list[int]
) -> None:
    sent = requests_of.buffer_bursts("judge", [_episode(), _episode()], buffer)
    assert [len(burst) for burst in sent] == [2] * bursts  # every env in step
    assert _steps_shown(sent[0][0]) == pytest.approx(first, abs=2)
    assert sent[0][0]["max_tokens"] == 16


def test_the_equal_frames_request_carries_this_project_s_frames() -> None:
    [[body]] = requests_of.equal_frames_bursts("judge", [_episode()])
    indices = requests_of.main_frame_indices(STEPS)
    assert len(indices) == DEFAULT_NFRAMES
    assert _steps_shown(body) == pytest.approx(indices, abs=2)


@pytest.mark.parametrize("native", [False, True], ids=["default", "native"])
def test_this_project_s_request_is_the_env_client_s(native: bool, tmp_path) -> None:
    from vlm_reward.video_io import probe_video

    body = requests_of.project_body(_episode(), tmp_path, native)
    request = ScoreRequest.model_validate(body)
    assert (request.nframes, request.native_frame_size) == (DEFAULT_NFRAMES, native)
    video = tmp_path / "sent.mp4"
    video.write_bytes(base64.b64decode(request.video_b64))
    assert probe_video(video).num_frames == DEFAULT_NFRAMES


def test_the_rows_name_their_settings_and_requests_per_episode() -> None:
    rows = {way.name: way for way in bench.ways()}
    assert rows["RLinf per chunk"].per_episode == 60
    assert "input_interval 1, input_on_done false" in rows["RLinf per chunk"].what
    assert "input_interval 64, input_on_done true" in rows["RLinf per episode"].what
    assert "does not run in RLinf main" in rows["RLinf per episode"].what
    assert [way.per_episode for way in bench.ways()][1:] == [1, 1, 1, 1]
