"""The server as a real process with ``qwen2_5_vl_hf`` on the tiny checkpoint, over HTTP.

The model's weights are random, so its answer may not hold a score: the test accepts a
200 with a well-formed score or a 502 ``parse_error`` that quotes the answer, and checks
that the full path (video read, processor, generate, parsing) ran for both prompt layouts.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support.server import ServerProcess
from vlm_reward.video_io import count_frames

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tiny_qwen_checkpoint: str, sample_mp4: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    root = tmp_path_factory.mktemp("hf-root")
    video = root / "episode.mp4"
    shutil.copy(sample_mp4, video)
    server = ServerProcess(
        ["--backend", "qwen2_5_vl_hf", "--model", tiny_qwen_checkpoint, "--video-root", str(root)],
        root / "server.log",
        plugins=(),
    ).wait_ready(timeout=120)
    yield server, video
    server.stop()


def _check_well_formed(response: requests.Response) -> None:
    body = response.json()
    if response.status_code == 200:
        assert 0.0 <= body["score"] <= 1.0 and body["backend"] == "qwen2_5_vl_hf"
        assert isinstance(body["answer"], str) and body["latency_s"] > 0
        assert body["model"] == Path(body["model"]).name, "no host path in the response"
    else:
        assert response.status_code == 502, body
        assert body["error"]["type"] == "parse_error" and "qwen2_5_vl_hf" in body["error"]["message"]


@pytest.mark.parametrize("prompt", ["qwen", "primo"], ids=["video_only", "primo_first_video_last"])
def test_scores_a_16_frame_mp4_end_to_end(served, prompt: str) -> None:
    server, video = served
    assert count_frames(video) == 16
    body = {"task_text": "move the red square to the right", "video_path": str(video), "nframes": 16}
    body["backend_kwargs"] = {"prompt": prompt, "max_new_tokens": 6}
    response = requests.post(server.endpoint, json=body, timeout=120)
    _check_well_formed(response)
    log = server.log_containing("status=", "decord")
    assert "status=" in log and "decord" in log, "the video went through qwen-vl-utils"


def test_health_and_backends_report_the_loaded_model(served) -> None:
    server, _ = served
    assert requests.get(server.url("/health"), timeout=5).status_code == 200
    backends = requests.get(server.url("/backends"), timeout=5).json()
    assert backends["default"] == "qwen2_5_vl_hf" and "qwen2_5_vl_hf" in backends["loaded"]
