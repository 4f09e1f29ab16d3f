"""Fixtures of the fine-tune tests: run dirs to train on, and the judge's serving settings.

- ``expert_run`` (``tests/reward_eval/conftest.py``): the scripted expert's two successes and
  near miss in the real LIBERO simulator, once a session.
- :func:`small_judge_config`: the env YAML with the judge shown the default request's 16 frames
  (``DEFAULT_NFRAMES``), each of at most 12,544 pixels (16 visual tokens a frame, where the
  default 200,704 would upscale LIBERO's frames to ~1,400 prompt tokens and a training step to
  ~1.5 s): the same request in training and on the servers.
- :func:`make_run`: a hand-made run dir of small synthetic videos, for the checks of bad input.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from reward_eval.job.env_config import load_env_config
from reward_eval.job.paths import ENV_CONFIG
from tests.conftest import moving_square_frames
from vlm_reward.protocol import DEFAULT_NFRAMES
from vlm_reward.video_io import encode_mp4

SMALL_JUDGE = {"nframes": DEFAULT_NFRAMES, "max_pixels": 12544}
TASK_TEXT = "put both the alphabet soup and the tomato sauce in the basket"


@pytest.fixture(scope="session")
def small_judge_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """libero_10.yaml with :data:`SMALL_JUDGE` in its reward_model block."""
    cfg = load_env_config(ENV_CONFIG)
    for key, value in SMALL_JUDGE.items():
        cfg.reward_model[key] = value
    path = tmp_path_factory.mktemp("env-config") / "libero_10_small_judge.yaml"
    OmegaConf.save(cfg, path)
    return path


Episode = tuple[int | None, bool]  # (reset_state_id, native_success)


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    """``make_run(name, episodes, same_video=False)``: a run dir with one kept MP4 per episode
    (a sliding square; with ``same_video`` every record points at one file) and its episode log."""

    def make(name: str, episodes: Sequence[Episode], same_video: bool = False) -> Path:
        run = tmp_path / name
        (run / "videos").mkdir(parents=True)
        lines = []
        for i, (state, success) in enumerate(episodes):
            video = run / "videos" / f"episode_{0 if same_video else i}.mp4"
            if not video.exists():
                encode_mp4(moving_square_frames(12 + i % 3 * 2, 64), video, fps=4)
            record = {
                "task_id": 0,
                "task_text": TASK_TEXT,
                "reset_state_id": state,
                "native_success": success,
            }
            lines.append({**record, "vlm_score": 0.5, "frames_sent": 12, "video_path": str(video)})
        (run / "vlm_episodes_train_rank0.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        return run

    return make
