"""The training's side of its judges, without Ray: which envs use them, the key, the env wiring."""

from __future__ import annotations

import json

import pytest
from omegaconf import OmegaConf

from examples.embodiment.judge_replicas import RUN_KEY_ENV, judge_settings, served_envs, wire_envs
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.ray_replicas.run_key import fetch_into_environ

PLUGIN = "tests.support.training_backends"


def training_cfg(train: bool = True, eval_: bool = False, **judge: object) -> object:
    block = {"enable": True, "backend": "score_sequence", "model": "none", "plugins": [PLUGIN], **judge}
    env = {name: {"reward_model": {"enable": on}} for name, on in (("train", train), ("eval", eval_))}
    return OmegaConf.create({"env": env, "reward_server": block})


def test_without_the_block_or_with_it_off_nothing_changes() -> None:
    assert judge_settings(OmegaConf.create({"env": {"train": {"reward_model": {"enable": True}}}})) is None
    assert judge_settings(training_cfg(enable=False)) is None


@pytest.mark.parametrize(
    ("train", "eval_", "envs"),
    [(True, False, ["train"]), (True, True, ["train", "eval"]), (False, True, ["eval"])],
    ids=["train", "both", "eval"],
)
def test_every_env_that_scores_is_pointed_at_the_replicas(train: bool, eval_: bool, envs: list[str]) -> None:
    cfg = training_cfg(train, eval_)
    judges = judge_settings(cfg)
    assert judges is not None and served_envs(cfg) == envs
    lines = wire_envs(cfg, ["http://10.0.0.5:4000/score", "http://10.0.0.6:4000/score"], judges.settings)
    assert [line.split(".")[1] for line in lines] == envs
    for name in envs:
        block = RewardModelConfig.from_mapping(cfg.env[name].reward_model)
        assert block.endpoints == ("http://10.0.0.5:4000/score", "http://10.0.0.6:4000/score")
        assert (block.api_key_env, block.backend, block.send_video_inline) == (
            RUN_KEY_ENV,
            "score_sequence",
            True,
        )


def test_a_shared_video_root_becomes_where_the_env_writes_its_videos(tmp_path) -> None:
    cfg = training_cfg(video_root=str(tmp_path))
    wire_envs(cfg, ["http://10.0.0.5:4000/score"], judge_settings(cfg).settings)
    block = RewardModelConfig.from_mapping(cfg.env.train.reward_model)
    assert (block.send_video_inline, block.temp_video_dir) == (False, str(tmp_path))


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        (
            training_cfg(train=False),
            "reward_server.enable is true but no env scores episodes with it",
        ),
        (training_cfg(replicas=0), "reward_server.replicas: input should be greater than 0"),
    ],
    ids=["serves_no_env", "bad_value"],
)
def test_a_block_that_cannot_serve_is_refused(cfg: object, message: str) -> None:
    with pytest.raises(ValueError, match="reward_server") as info:
        judge_settings(cfg)
    assert message in str(info.value)


def test_videos_written_outside_the_shared_root_are_refused(tmp_path) -> None:
    cfg = training_cfg(video_root=str(tmp_path / "shared"))
    (tmp_path / "shared").mkdir()
    cfg.env.train.reward_model.temp_video_dir = str(tmp_path / "elsewhere")
    with pytest.raises(ValueError) as info:
        judge_settings(cfg)
    assert f"temp_video_dir '{tmp_path / 'elsewhere'}' is outside reward_server.video_root" in str(info.value)


@pytest.mark.parametrize(
    ("variable", "environ"),
    [(None, {}), (RUN_KEY_ENV, {RUN_KEY_ENV: "exported"}), (RUN_KEY_ENV, {})],
    ids=["no_variable", "already_set", "not_a_ray_worker"],
)
def test_outside_a_run_the_key_variable_is_left_as_it_is(variable: str | None, environ: dict) -> None:
    before = dict(environ)
    assert fetch_into_environ(variable, environ) is False and environ == before


def test_the_replicas_self_test_asks_as_the_served_env_asks() -> None:
    cfg = training_cfg()
    cfg.env.train.reward_model.update(
        {"success_threshold": 0.3, "nframes": 8, "score_mode": "unit", "backend_kwargs": {"prompt": "yes_no"}}
    )
    judges = judge_settings(cfg)
    asked = {
        "nframes": 8,
        "max_pixels": 200704,
        "backend_kwargs": {"prompt": "yes_no"},
        "video_fps": 4.0,
        "native_frame_size": False,
    }
    assert judges is not None and judges.self_test_args == (
        "--self-test-threshold",
        "0.3",
        "--self-test-request",
        json.dumps({**asked, "score_mode": "unit"}),
    )
