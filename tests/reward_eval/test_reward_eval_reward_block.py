"""reward_eval.job.reward_block: one precedence rule for the block every command judges with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reward_eval.job.reward_block import JOB_KEYS, SOURCES, env_yaml_path, resolve_reward_block
from vlm_reward.client.config import RewardModelConfig

JOB = {
    "enable": True,
    "endpoint": "http://127.0.0.1:1/score",
    "api_key_env": None,
    "fail_on_request_error": False,
    "use_for_training": False,
    "episode_log_dir": None,
    "keep_temp_video": False,
    "temp_video_dir": None,
}
YAML = {
    **RewardModelConfig().model_dump(),
    "enable": False,
    "endpoint": "http://yaml:18080/score",
    "nframes": 12,
    "score_mode": "rubric",
    "success_threshold": 0.6,
    "timeout": 50.0,
    "backend_kwargs": {"prompt": "roboreward", "max_new_tokens": 7},
}

# (id, options, source_run, key, expected value, expected source)
CASES = [
    ("yaml_when_nothing_else", {}, {}, "nframes", 12, "env_yaml"),
    ("option_beats_yaml", {"timeout": 9.0}, {}, "timeout", 9.0, "option"),
    ("option_not_given_is_none", {"timeout": None}, {}, "timeout", 50.0, "env_yaml"),
    ("source_run_beats_yaml", {}, {"success_threshold": 0.3}, "success_threshold", 0.3, "source_run"),
    (
        "option_beats_source_run",
        {"success_threshold": 0.9},
        {"success_threshold": 0.3},
        "success_threshold",
        0.9,
        "option",
    ),
    ("source_run_silent_is_yaml", {}, {"success_threshold": None}, "success_threshold", 0.6, "env_yaml"),
    ("source_run_only_its_keys", {}, {"timeout": 1.0}, "timeout", 50.0, "env_yaml"),
    ("false_is_given", {"binary_reward": False}, {}, "binary_reward", False, "option"),
    ("yaml_null_stays", {}, {}, "fallback_score", None, "env_yaml"),
    ("job_beats_all", {}, {}, "endpoint", JOB["endpoint"], "job"),
    ("yaml_score_mode", {}, {}, "score_mode", "rubric", "env_yaml"),
]


@pytest.mark.parametrize(
    ("options", "source_run", "key", "value", "source"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_key_comes_from_the_highest_source_that_sets_it(
    options: dict[str, Any], source_run: dict[str, Any], key: str, value: Any, source: str
) -> None:
    block = resolve_reward_block(YAML, job=JOB, options=options, source_run=source_run)
    assert (block.values[key], block.sources[key]) == (value, source)
    assert set(block.sources.values()) <= set(SOURCES)


def test_backend_kwargs_merge_key_by_key_with_a_source_each() -> None:
    block = resolve_reward_block(
        YAML,
        job=JOB,
        options={"backend_kwargs": {"prompt": "yes_no"}},
        source_run={"backend_kwargs": {"max_new_tokens": 9, "answer": "x"}},
    )
    assert block.values["backend_kwargs"] == {"prompt": "yes_no", "max_new_tokens": 9, "answer": "x"}
    assert {k: v for k, v in block.sources.items() if k.startswith("backend_kwargs.")} == {
        "backend_kwargs.prompt": "option",
        "backend_kwargs.max_new_tokens": "source_run",
        "backend_kwargs.answer": "source_run",
    }


def test_the_job_may_own_more_keys_and_the_result_validates() -> None:
    block = resolve_reward_block(YAML, job={**JOB, "backend": "qwen_vl_hf"}, options={"backend": None})
    config = block.config()
    assert (config.backend, block.sources["backend"], config.enable, config.nframes) == (
        "qwen_vl_hf",
        "job",
        True,
        12,
    )
    assert set(block.values) == set(RewardModelConfig.model_fields)


def test_a_partial_yaml_block_has_the_block_defaults() -> None:
    block = resolve_reward_block({"nframes": 8}, job=JOB)
    assert (block.values["nframes"], block.values["max_pixels"]) == (8, RewardModelConfig().max_pixels)
    assert block.sources["max_pixels"] == "env_yaml"


BAD = [
    ("job_key_missing", {k: v for k, v in JOB.items() if k != "endpoint"}, {}, {}, "missing: endpoint"),
    ("unknown_option", JOB, {"nframe": 3}, {}, "unknown reward_model keys ['nframe']"),
    ("unknown_source", JOB, {}, {"thresh": 3}, "source run sets unknown"),
    ("option_on_job_key", JOB, {"endpoint": "http://x/score"}, {}, "cannot set the job's keys ['endpoint']"),
]


@pytest.mark.parametrize(
    ("job", "options", "source_run", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_a_misuse_is_one_sentence(job: dict, options: dict, source_run: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        resolve_reward_block(YAML, job=job, options=options, source_run=source_run)


def test_the_job_keys_are_keys_of_the_block() -> None:
    assert set(JOB_KEYS) <= set(RewardModelConfig.model_fields)


def test_the_env_yaml_is_the_option_else_the_recorded_one_else_the_default(tmp_path: Path) -> None:
    recorded = tmp_path / "recorded.yaml"
    default = tmp_path / "default.yaml"
    assert env_yaml_path("given.yaml", str(recorded), default) == (Path("given.yaml"), "option")
    assert env_yaml_path(None, str(recorded), default) == (default, "default"), "a vanished file"
    recorded.write_text("{}")
    assert env_yaml_path(None, str(recorded), default) == (recorded, "source_run")
    assert env_yaml_path(None, None, default) == (default, "default")
