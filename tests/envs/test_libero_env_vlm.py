"""The project's LiberoEnv with the reward model on, against a real reward server.

One env (2 LIBERO processes, ``max_episode_steps`` 6, chunks of 4) is shared by the whole
module; each case reconfigures the reward settings between episodes, as resets are the
expensive part. The server runs the ``recording`` test backend, which answers a known
score and logs every job it receives, so calls are counted on the server side.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.envs.conftest import idle_actions, libero_cfg, libero_env
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.libero, pytest.mark.slow]

NUM_ENVS, MAX_STEPS, CHUNK, CHUNKS = 2, 6, 4, 3
END_STEP = MAX_STEPS - 1  # 0-based index of the truncation step
COEF = 5.0  # reward_coef of libero_10.yaml


class Ctx:
    def __init__(self, env, server: ServerProcess, calls: Path, tmp: Path) -> None:
        self.env, self.server, self.calls, self.tmp = env, server, calls, tmp

    def n_calls(self) -> int:
        return len(self.calls.read_text().splitlines())

    def log_lines(self) -> list[dict]:
        [log] = (self.tmp / "episodes").glob("*.jsonl")
        return [json.loads(line) for line in log.read_text().splitlines()]

    def configure(self, use_rel: bool = True, auto_reset: bool = False, **reward_model) -> None:
        """Change reward settings between episodes (tests only: the env reads them per step)."""
        cfg = self.env.reward_model.replace(**reward_model)
        self.env.reward_model = cfg
        self.env._client.cfg = cfg
        self.env.use_rel_reward = use_rel
        self.env.auto_reset = auto_reset

    def episode(self, chunks: int = CHUNKS) -> dict:
        obs, _ = self.env.reset()
        out = [self.env.chunk_step(idle_actions(NUM_ENVS, CHUNK)) for _ in range(chunks)]
        return {
            "reset_obs": obs,
            "rewards": torch.cat([o[1] for o in out], dim=1),
            "infos": [o[4][-1] for o in out],
        }


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ctx]:
    tmp = tmp_path_factory.mktemp("vlm-env")
    calls = tmp / "calls.jsonl"
    args = ["--backend", "recording", "--model", "none", "--video-root", str(tmp)]
    server = ServerProcess(
        [*args, "--backend-kwargs", json.dumps({"log_path": str(calls)})],
        tmp / "server.log",
        plugins=("tests.support.env_backends",),
    ).wait_ready()
    cfg = libero_cfg(
        max_episode_steps=MAX_STEPS,
        **{
            "reward_model.enable": True,
            "reward_model.endpoint": server.endpoint,
            "reward_model.backend": "recording",
            "reward_model.temp_video_dir": str(tmp / "videos"),
            "reward_model.episode_log_dir": str(tmp / "episodes"),
        },
    )
    try:
        with libero_env(cfg, NUM_ENVS) as env:
            yield Ctx(env, server, calls, tmp)
    finally:
        server.stop()


def _expected(signal: float, use_rel: bool) -> np.ndarray:
    """RLinf's shaping with s = 0 before the end step and s held after it."""
    rewards = np.zeros((NUM_ENVS, CHUNK * CHUNKS))
    if use_rel:
        rewards[:, END_STEP] = COEF * signal
    else:
        rewards[:, END_STEP:] = COEF * signal
    return rewards


SHAPING = [
    ("binary_rel_success", True, True, "0.7", 1.0),
    ("binary_rel_failure", True, True, "0.3", 0.0),
    ("binary_abs_success", True, False, "0.7", 1.0),
    ("continuous_rel", False, True, "0.7", 0.7),
    ("continuous_abs", False, False, "<answer>85%</answer>", 0.85),
]


@pytest.mark.parametrize(
    ("binary", "use_rel", "answer", "signal"), [s[1:] for s in SHAPING], ids=[s[0] for s in SHAPING]
)
def test_reward_at_the_end_step_follows_rlinf_shaping(ctx: Ctx, binary, use_rel, answer, signal) -> None:
    ctx.configure(use_rel=use_rel, binary_reward=binary, backend_kwargs={"answer": answer})
    calls_before = ctx.n_calls()
    result = ctx.episode()
    np.testing.assert_allclose(result["rewards"].numpy(), _expected(signal, use_rel), atol=1e-6)
    # One call per episode, although the ended envs keep reporting truncation afterwards.
    assert ctx.n_calls() - calls_before == NUM_ENVS


def test_metrics_and_episode_log(ctx: Ctx) -> None:
    ctx.configure(binary_reward=True, backend_kwargs={"answer": "0.7"})
    lines_before = len(ctx.log_lines())
    result = ctx.episode(chunks=2)
    episode = result["infos"][-1]["episode"]
    expected = {
        "vlm_scored": 1,
        "vlm_score": 0.7,
        "vlm_success": 1,
        "native_success": 0,
        "vlm_native_agree": 0,
    }
    for key, value in expected.items():
        np.testing.assert_allclose(episode[key].numpy(), [value] * NUM_ENVS, err_msg=key)
    assert episode["vlm_fallback"].sum() == 0 and (episode["vlm_latency_s"] > 0).all()
    first_chunk = result["infos"][0]["episode"]
    assert first_chunk["vlm_scored"].sum() == 0, "not scored before the episode ends"
    lines = ctx.log_lines()[lines_before:]
    assert [line["env"] for line in lines] == [0, 1]
    tasks = result["reset_obs"]["task_descriptions"]
    for line, task in zip(lines, tasks, strict=True):
        assert line["task_text"] == task and line["episode_length"] == MAX_STEPS
        assert line["native_success"] is False and line["vlm_score"] == 0.7 and line["vlm_success"] is True
        assert line["frames_sent"] == MAX_STEPS + 1 and line["fallback"] is False and line["error"] is None
        assert line["reset_state_id"] >= 0 and 0 <= line["task_id"] < 10
    frames_seen = [json.loads(c)["frames"] for c in ctx.calls.read_text().splitlines()[-NUM_ENVS:]]
    assert frames_seen == [MAX_STEPS + 1] * NUM_ENVS, "reset frame + one frame per step"


def test_temp_videos_removed_or_kept(ctx: Ctx) -> None:
    videos = ctx.tmp / "videos"
    ctx.configure(keep_temp_video=False, backend_kwargs={"answer": "0.7"})
    ctx.episode(chunks=2)
    assert list(videos.iterdir()) == []
    ctx.configure(keep_temp_video=True)
    ctx.episode(chunks=2)
    kept = [line["video_path"] for line in ctx.log_lines()[-NUM_ENVS:]]
    assert all(Path(p).parent == videos and Path(p).stat().st_size > 0 for p in kept)
    ctx.configure(keep_temp_video=False)


def test_unparseable_answer_takes_the_fallback_path(ctx: Ctx) -> None:
    ctx.configure(binary_reward=True, backend_kwargs={"answer": "I cannot tell from this video."})
    result = ctx.episode(chunks=2)
    episode = result["infos"][-1]["episode"]
    np.testing.assert_array_equal(episode["vlm_fallback"].numpy(), [1, 1])
    np.testing.assert_array_equal(episode["vlm_score"].numpy(), [0, 0])  # native success of an idle robot
    assert result["rewards"].abs().sum() == 0
    line = ctx.log_lines()[-1]
    assert line["fallback"] is True and "I cannot tell" in line["error"]


def test_shadow_mode_scores_but_trains_on_native_reward(ctx: Ctx) -> None:
    ctx.configure(use_for_training=False, backend_kwargs={"answer": "0.9"})
    calls_before = ctx.n_calls()
    result = ctx.episode(chunks=2)
    ctx.configure(use_for_training=True)
    assert result["rewards"].abs().sum() == 0, "native reward of an idle robot is zero"
    assert ctx.n_calls() - calls_before == NUM_ENVS
    np.testing.assert_allclose(result["infos"][-1]["episode"]["vlm_score"].numpy(), [0.9, 0.9])


def test_auto_reset_scores_before_resetting(ctx: Ctx) -> None:
    ctx.configure(auto_reset=True, binary_reward=False, backend_kwargs={"answer": "0.6"})
    calls_before = ctx.n_calls()
    try:
        result = ctx.episode(chunks=2)
    finally:
        ctx.configure(auto_reset=False)
    final = result["infos"][-1]["final_info"]["episode"]
    np.testing.assert_allclose(final["vlm_score"].numpy(), [0.6, 0.6])
    assert ctx.n_calls() - calls_before == NUM_ENVS
    # The ended episodes got their reward; the fresh ones start with one cached frame.
    np.testing.assert_allclose(result["rewards"][:, END_STEP].numpy(), [COEF * 0.6] * NUM_ENVS)
    assert [len(f) for f in ctx.env._frames] == [1, 1]
