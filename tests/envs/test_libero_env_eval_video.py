"""The reward model in RLinf's eval split, inside RLinf's ``RecordVideo``, on a worker with a rank.

RLinf's env worker builds the eval env from ``env.eval`` (``is_eval``, ``auto_reset`` and
``ignore_terminations`` on, as in libero_10_grpo_openvlaoft.yaml), wraps it in
``RecordVideo`` when ``video_cfg.save_video`` is on, and passes ``seed_offset = rank *
stage_num + stage`` and its ``worker_info``. Here: one env, 4-step episodes, built as stage 1
of env worker rank 1 (2 workers, 2 stages each: seed_offset 3), wrapped as RLinf wraps it.
The server runs the ``fixed_score`` test backend (0.8: a VLM success).

(Writing the wrapper's own MP4 is not exercised: ``flush_video`` needs imageio's ffmpeg
plugin, which this venv lacks; that holds with the reward model off too.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from tests.envs.conftest import cached_frame_counts, idle_actions, libero_cfg, libero_env
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.libero, pytest.mark.slow]

STEPS = 4  # max_episode_steps = the chunk: one chunk per episode
RANK, WORKERS, STAGES, STAGE = 1, 2, 2, 1
SEED_OFFSET = RANK * STAGES + STAGE  # 3: what RLinf's env worker passes; not the rank
COEF = 5.0  # reward_coef of libero_10.yaml


class Eval:
    def __init__(self, wrapped: Any, server: ServerProcess, tmp: Path) -> None:
        self.wrapped, self.env, self.server, self.tmp = wrapped, wrapped.env, server, tmp

    def start(self) -> None:
        """RLinf's evaluate(): ``is_start`` then reset, so the eval pool starts over."""
        self.wrapped.is_start = True
        self.wrapped.reset()

    def log_files(self) -> list[str]:
        return sorted(p.name for p in (self.tmp / "episodes").glob("*.jsonl"))

    def log_lines(self) -> list[dict]:
        path = self.tmp / "episodes" / f"vlm_episodes_eval_rank{RANK}.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def posts(self) -> int:
        return self.server.log().count("POST /score")


@pytest.fixture(scope="module")
def ev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Eval]:
    from rlinf.envs.wrappers import RecordVideo

    tmp = tmp_path_factory.mktemp("vlm-eval")
    args = ["--backend", "fixed_score", "--model", "m", "--video-root", str(tmp)]
    server = ServerProcess(args, tmp / "server.log").wait_ready()
    cfg = libero_cfg(
        max_episode_steps=STEPS,
        is_eval=True,
        auto_reset=True,
        ignore_terminations=True,
        use_ordered_reset_state_ids=True,
        **{
            "video_cfg.save_video": True,
            "video_cfg.video_base_dir": str(tmp / "video"),
            "reward_model.enable": True,
            "reward_model.endpoint": server.endpoint,
            "reward_model.backend": "fixed_score",
            "reward_model.temp_video_dir": str(tmp / "videos"),
            "reward_model.episode_log_dir": str(tmp / "episodes"),
        },
    )
    worker_info = SimpleNamespace(rank=RANK, group_world_size=WORKERS)
    placement = {
        "seed_offset": SEED_OFFSET,
        "total_num_processes": WORKERS * STAGES,
        "worker_info": worker_info,
    }
    try:
        with libero_env(cfg, 1, **placement) as env:
            wrapped = RecordVideo(env, cfg.video_cfg)  # as RLinf's env worker wraps it
            try:
                yield Eval(wrapped, server, tmp)
            finally:
                wrapped.close()  # its writer thread, then our env's close (closing again is a no-op)
    finally:
        server.stop()


def test_eval_episodes_through_record_video_are_scored_and_logged_under_the_rank(ev: Eval) -> None:
    ev.start()
    lines_before, posts_before = len(ev.log_lines()), ev.posts()
    frames_before = len(ev.wrapped.render_images)
    ids, rewards, finals = [], [], []
    for _ in range(2):  # two episodes: each ends at the chunk's last step, then auto-resets
        ids.append(int(ev.env.reset_state_ids[0]))
        _, chunk_rewards, _, truncations, infos = ev.wrapped.chunk_step(idle_actions(1, STEPS))
        assert bool(truncations[0, -1])
        rewards.append(chunk_rewards[0].tolist())
        finals.append({k: float(v[0]) for k, v in infos[-1]["final_info"]["episode"].items()})
    assert rewards == [[0.0, 0.0, 0.0, COEF]] * 2  # use_rel_reward: the VLM term at the end step
    assert [(f["vlm_scored"], f["vlm_score"], f["vlm_success"]) for f in finals] == [(1.0, 0.8, 1.0)] * 2
    assert [f["return"] for f in finals] == [COEF] * 2
    assert ev.log_files() == [f"vlm_episodes_eval_rank{RANK}.jsonl"]
    lines = ev.log_lines()[lines_before:]
    assert [(ln["split"], ln["rank"], ln["seed_offset"], ln["env"]) for ln in lines] == [
        ("eval", RANK, SEED_OFFSET, 0)
    ] * 2
    # Collected before the auto-reset: each line names the episode that ended, not the next one.
    assert [ln["reset_state_id"] for ln in lines] == ids and ids[0] != ids[1]
    assert [ln["episode_length"] for ln in lines] == [STEPS, STEPS]
    assert ev.server.log_containing("POST /score").count("POST /score") - posts_before == 2
    # RecordVideo saw every step (the end step as its final observation) and each reset frame.
    assert len(ev.wrapped.render_images) - frames_before == 2 * (STEPS + 1)


def test_steps_through_record_video_score_the_episode_before_the_auto_reset(ev: Eval) -> None:
    ev.start()
    lines_before = len(ev.log_lines())
    ended_id = int(ev.env.reset_state_ids[0])
    action = idle_actions(1, 1)[:, 0]
    steps = [ev.wrapped.step(action) for _ in range(STEPS)]
    rewards = torch.stack([s[1] for s in steps], dim=1)
    np.testing.assert_allclose(rewards.numpy(), [[0.0, 0.0, 0.0, COEF]])
    final = steps[-1][4]["final_info"]["episode"]
    assert (float(final["vlm_scored"][0]), float(final["vlm_score"][0])) == (1.0, 0.8)
    [line] = ev.log_lines()[lines_before:]
    assert (line["reset_state_id"], line["rank"], line["seed_offset"]) == (ended_id, RANK, SEED_OFFSET)
    assert cached_frame_counts(ev.env) == [1], "auto-reset: the new episode's frame"
