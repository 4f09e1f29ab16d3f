"""The whole path with a real model: LIBERO frames -> MP4 -> server -> transformers generate.

The server runs ``qwen_vl_hf`` on the tiny random-weight checkpoint, so its answers are
noise: the test checks that every stage ran and that the outcome, a score or a parse
error taken as a fallback, is reported consistently in metrics and the episode log.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.envs.conftest import idle_actions, libero_cfg, libero_env
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.libero, pytest.mark.slow]

MAX_STEPS = 4


def test_tiny_qwen_scores_a_real_libero_episode(tiny_qwen_checkpoint: str, tmp_path) -> None:
    server = ServerProcess(
        ["--backend", "qwen_vl_hf", "--model", tiny_qwen_checkpoint, "--video-root", str(tmp_path)],
        tmp_path / "server.log",
        plugins=(),
    ).wait_ready(timeout=120)
    cfg = libero_cfg(
        max_episode_steps=MAX_STEPS,
        **{
            "reward_model.enable": True,
            "reward_model.endpoint": server.endpoint,
            "reward_model.backend": "qwen_vl_hf",
            "reward_model.nframes": 4,
            "reward_model.temp_video_dir": str(tmp_path / "videos"),
            "reward_model.episode_log_dir": str(tmp_path / "episodes"),
        },
    )
    try:
        with libero_env(cfg, num_envs=1) as env:
            env.reset()
            *_, infos = env.chunk_step(idle_actions(1, MAX_STEPS))
    finally:
        server.stop()
    episode = infos[-1]["episode"]
    [line] = [json.loads(x) for x in next((tmp_path / "episodes").glob("*.jsonl")).read_text().splitlines()]
    assert episode["vlm_scored"].tolist() == [1.0]
    assert line["frames_sent"] == 4 and line["episode_length"] == MAX_STEPS
    assert "POST /score" in server.log() and "qwen_vl_hf" in server.log()
    if line["fallback"]:
        # A random model rarely writes a number: the server says parse_error, with its answer.
        assert "parse_error" in line["error"] and "HTTP 502" in line["error"]
        assert episode["vlm_fallback"].tolist() == [1.0] and line["vlm_score"] == 0.0
    else:
        assert 0.0 <= line["vlm_score"] <= 1.0 and line["vlm_answer"] is not None
        np.testing.assert_allclose(episode["vlm_score"].numpy(), [line["vlm_score"]])
    assert list((tmp_path / "videos").iterdir()) == []
