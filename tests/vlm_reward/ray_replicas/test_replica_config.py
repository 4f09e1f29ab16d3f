"""The reward_server block: the YAML's defaults, and one sentence for each bad value or judge."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.envs.conftest import ENV_CONFIG_DIR
from vlm_reward.judging.model_family import QWEN2_5_VL
from vlm_reward.ray_replicas.config import RewardServerConfig
from vlm_reward.tools.runtime import server_python

TRAINING_YAML = ENV_CONFIG_DIR.parent / "libero_10_grpo_openvlaoft.yaml"
TEST_PLUGIN = "tests.support.training_backends"


def test_the_training_yaml_spells_out_every_key_with_its_default() -> None:
    block = OmegaConf.load(TRAINING_YAML).reward_server
    parsed = RewardServerConfig.from_mapping(block)
    assert set(block) == set(parsed.model_dump()), "every knob must be spelled out in the YAML"
    assert parsed == RewardServerConfig() and parsed.enable is False


def test_a_missing_block_is_off() -> None:
    assert RewardServerConfig.from_mapping(None).enable is False


BAD_BLOCKS = [
    ("unknown_key", {"replica": 2}, ValueError, "unknown key reward_server.replica; valid keys: enable, "),
    ("no_model", {"enable": True}, ValueError, "reward_server: model is required when enable is true"),
    ("zero_replicas", {"replicas": 0}, ValueError, "reward_server.replicas: input should be greater than 0"),
    ("negative_gpus", {"gpus_per_replica": -1}, ValueError, "reward_server.gpus_per_replica"),
    ("gpus_as_float", {"gpus_per_replica": 0.5}, TypeError, "reward_server.gpus_per_replica"),
    ("restarts_below_minus_1", {"max_restarts": -2}, ValueError, "reward_server.max_restarts"),
    ("timeout_as_text", {"start_timeout_s": "60"}, TypeError, "reward_server.start_timeout_s"),
    (
        "managed_flag",
        {"server_args": ["--port", "9000"]},
        ValueError,
        "reward_server.server_args: --port is set for every replica by the launcher",
    ),
    (
        "managed_flag_with_value",
        {"server_args": ["--api-key-file=/k"]},
        ValueError,
        "--api-key-file is set for every replica",
    ),
]


@pytest.mark.parametrize(
    ("values", "kind", "message"), [b[1:] for b in BAD_BLOCKS], ids=[b[0] for b in BAD_BLOCKS]
)
def test_a_bad_block_is_refused_in_one_sentence(values: dict, kind: type, message: str) -> None:
    with pytest.raises(kind) as info:
        RewardServerConfig(**values)
    assert message in str(info.value)
    assert str(info.value).count(". ") == 0 or "valid keys" in str(info.value), "one sentence"


def _judge(**values: object) -> RewardServerConfig:
    return RewardServerConfig(enable=True, **values)


BAD_JUDGES = [
    (
        "unknown_backend",
        {"backend": "qwen_vl_nope", "model": "m"},
        "reward_server.backend: unknown backend 'qwen_vl_nope'",
    ),
    (
        "plugin_not_importable",
        {"backend": "score_sequence", "model": "m", "plugins": ["no_such_module_here"]},
        "reward_server.plugins: cannot import 'no_such_module_here'",
    ),
    (
        "model_path_missing",
        {"backend": "qwen_vl_hf", "model": "/nonexistent/judge"},
        "reward_server.model: model path '/nonexistent/judge' does not exist",
    ),
    (
        "python_missing",
        {"backend": "qwen_vl_hf", "model": "Qwen/Qwen2.5-VL-7B-Instruct", "python": "/nonexistent/python"},
        "reward_server.python '/nonexistent/python' is not an executable file",
    ),
    (
        "video_root_missing",
        {
            "backend": "qwen_vl_hf",
            "model": "Qwen/Qwen2.5-VL-7B-Instruct",
            "video_root": "/nonexistent/videos",
        },
        "reward_server.video_root '/nonexistent/videos' is not an existing directory",
    ),
]


@pytest.mark.parametrize(("values", "message"), [b[1:] for b in BAD_JUDGES], ids=[b[0] for b in BAD_JUDGES])
def test_a_judge_that_cannot_start_is_refused_before_anything_starts(
    values: dict, message: str, tmp_path: Path
) -> None:
    with pytest.raises(ValueError) as info:
        _judge(**values).check_judge()
    assert message in str(info.value)


def test_a_judge_that_can_start_names_its_interpreter(tmp_path: Path) -> None:
    checkpoint = tmp_path / "judge"
    checkpoint.mkdir()  # only config.json is read before a server starts
    (checkpoint / "config.json").write_text(json.dumps({"model_type": QWEN2_5_VL.model_type}))
    judge = _judge(backend="qwen2_5_vl_hf", model=str(checkpoint), video_root=str(tmp_path))
    assert judge.check_judge() == sys.executable == server_python("qwen_vl_hf")
    assert judge.canonical_backend == "qwen_vl_hf"
    plugin = _judge(backend="score_sequence", model="none", plugins=[TEST_PLUGIN], python=sys.executable)
    assert plugin.check_judge() == sys.executable, "a plugin backend's model is the plugin's business"
