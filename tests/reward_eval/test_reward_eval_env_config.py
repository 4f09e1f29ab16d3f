"""reward_eval.job.env_config: every reader composes an env YAML as the training does."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from reward_eval.job.env_config import load_env_config
from reward_eval.job.paths import CONFIG_ROOT
from vlm_reward.client.config import RewardModelConfig

SUITES = ("libero_10", "libero_90", "libero_goal", "libero_object", "libero_spatial")


@pytest.mark.parametrize("suite", SUITES, ids=SUITES)
def test_each_suite_s_yaml_composes_with_the_whole_reward_model_block(suite: str) -> None:
    cfg = load_env_config(CONFIG_ROOT / "env" / f"{suite}.yaml")
    assert cfg.task_suite_name == suite and "defaults" not in cfg
    block = cfg.reward_model
    assert RewardModelConfig.from_mapping(block) == RewardModelConfig()
    assert set(block) == set(RewardModelConfig.model_fields), "the group spells out every key"
    assert OmegaConf.to_container(block)["episode_log_dir"].startswith("${oc.select:"), "left unresolved"
    assert cfg.max_episode_steps == 512 and cfg.init_params.camera_heights == 256


def test_a_user_yaml_elsewhere_includes_the_group_and_overrides_keys(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(
        "defaults:\n  - /reward_model@reward_model: default\n  - _self_\n\n"
        "task_suite_name: libero_goal\nreward_model:\n  nframes: 8\n  backend_kwargs: {prompt: roboreward}\n"
    )
    cfg = load_env_config(tmp_path / "mine.yaml")
    parsed = RewardModelConfig.from_mapping(cfg.reward_model)
    assert (parsed.nframes, parsed.backend_kwargs, parsed.max_pixels) == (8, {"prompt": "roboreward"}, 200704)
    cfg.task_id_filter = [0]  # the readers add keys: the result is not in struct mode


def test_a_self_contained_yaml_loads_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "whole.yaml").write_text("task_suite_name: libero_10\nreward_model:\n  enable: True\n")
    cfg = load_env_config(tmp_path / "whole.yaml")
    assert OmegaConf.to_container(cfg) == {"task_suite_name": "libero_10", "reward_model": {"enable": True}}


BAD = [
    ("missing", None, "is not a file"),
    ("list", "- a\n- b\n", "not a mapping"),
    ("unknown_default", "defaults:\n  - /reward_model@reward_model: nope\n", "does not compose"),
    ("not_yaml", "a: [1,\n", "not a readable YAML"),
]


@pytest.mark.parametrize(("text", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_bad_file_is_one_sentence_naming_it(tmp_path: Path, text: str | None, message: str) -> None:
    path = tmp_path / "env.yaml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        load_env_config(path)
    assert "env.yaml" in str(info.value)
