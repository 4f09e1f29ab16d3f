"""The reward_model block: defaults, the YAML files, and clear errors for bad values."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from reward_eval.job.env_config import load_env_config
from tests.envs.conftest import ENV_CONFIG_DIR
from vlm_reward.client.config import RewardModelConfig

DESIGN_DEFAULTS = {
    "enable": False,
    "endpoint": "http://127.0.0.1:18080/score",
    "timeout": 120,
    "nframes": 16,
    "max_pixels": 200704,
    "backend": "qwen_vl_vllm",
    "backend_kwargs": {},
    "video_fps": 4,
    "fail_on_request_error": False,
    "binary_reward": True,
    "success_threshold": 0.5,
    "keep_temp_video": False,
    "temp_video_dir": None,
}
ENV_YAMLS = sorted(p.name for p in ENV_CONFIG_DIR.glob("libero_*.yaml"))


def test_defaults_are_the_designed_ones() -> None:
    defaults = RewardModelConfig().model_dump()
    assert {k: defaults[k] for k in DESIGN_DEFAULTS} == DESIGN_DEFAULTS


@pytest.mark.parametrize("name", ENV_YAMLS, ids=ENV_YAMLS)
def test_every_env_yaml_has_the_full_block_with_the_defaults(name: str) -> None:
    block = load_env_config(ENV_CONFIG_DIR / name).reward_model
    parsed = RewardModelConfig.from_mapping(block)
    assert set(block) == set(parsed.model_dump()), "every knob must be spelled out in the YAML"
    assert set(block.guard) == set(parsed.guard.model_dump()), "and every knob of the guard"
    assert parsed == RewardModelConfig()


def test_missing_block_means_disabled() -> None:
    assert RewardModelConfig.from_mapping(None).enable is False


BAD_BLOCKS = [
    ("misspelled", {"enabel": True}, ValueError, "enabel"),
    ("unknown", {"enable": True, "n_frames": 8}, ValueError, "n_frames"),
    ("bool_as_int", {"nframes": True}, TypeError, "nframes"),
    ("str_for_float", {"timeout": "120"}, TypeError, "timeout"),
    ("float_for_int", {"nframes": 16.5}, TypeError, "nframes"),
    ("null_required", {"enable": None}, TypeError, "enable"),
    ("zero_nframes", {"nframes": 0}, ValueError, "nframes"),
    ("negative_timeout", {"timeout": -1}, ValueError, "timeout"),
    ("nan_fps", {"video_fps": float("nan")}, ValueError, "video_fps"),
    ("threshold_above_1", {"success_threshold": 1.5}, ValueError, "success_threshold"),
    ("fallback_negative", {"fallback_score": -0.1}, ValueError, "fallback_score"),
    ("bad_score_mode", {"score_mode": "percent"}, ValueError, "score_mode"),
    ("not_a_url", {"endpoint": "127.0.0.1:18080/score"}, ValueError, "endpoint"),
    ("no_replicas", {"endpoint": []}, ValueError, "endpoint"),
    ("replica_not_a_url", {"endpoint": ["http://a/score", "b:1/score"]}, ValueError, "'b:1/score'"),
    ("replica_twice", {"endpoint": ["http://a/score", "http://a/score"]}, ValueError, "twice"),
    ("endpoint_number", {"endpoint": 18080}, TypeError, "endpoint"),
    ("zero_cooldown", {"replica_cooldown_s": 0}, ValueError, "replica_cooldown_s"),
    ("kwargs_not_mapping", {"backend_kwargs": ["a"]}, TypeError, "backend_kwargs"),
    ("negative_retries", {"max_retries": -1}, ValueError, "max_retries"),
    ("key_instead_of_variable", {"api_key_env": "sk-3f9a b2"}, ValueError, "not the key itself"),
    ("variable_starting_with_digit", {"api_key_env": "1KEY"}, ValueError, "api_key_env"),
    ("variable_not_a_string", {"api_key_env": 1}, TypeError, "api_key_env"),
    ("canary_rate_above_1", {"canary_rate": 1.5}, ValueError, r"reward_model\.canary_rate"),
    ("unknown_perturbation", {"canary_perturbations": ["mirror"]}, ValueError, "among reversed, frozen"),
    ("no_perturbation", {"canary_perturbations": []}, ValueError, "canary_perturbations"),
    ("perturbation_twice", {"canary_perturbations": ["frozen", "frozen"]}, ValueError, "twice"),
    ("zero_canary_cap", {"canary_max_per_chunk": 0}, ValueError, "canary_max_per_chunk"),
    ("zero_window", {"health_window": 0}, ValueError, "health_window"),
    ("guard_misspelled", {"guard": {"windw": 5}}, ValueError, r"unknown key reward_model\.guard\.windw"),
    ("guard_action", {"guard": {"action": "halt"}}, ValueError, r"guard\.action.*'warn', 'native' or 'stop'"),
    ("guard_rate", {"guard": {"max_false_positive_rate": 2}}, ValueError, r"guard\.max_false_positive_rate"),
    ("guard_enable_int", {"guard": {"enable": 1}}, TypeError, r"reward_model\.guard\.enable"),
    ("guard_not_a_block", {"guard": True}, TypeError, r"reward_model\.guard:"),
    (
        "guard_min_above_window",
        {"guard": {"min_episodes": 30, "window": 20}},
        ValueError,
        r"min_episodes \(30\) must be at most window \(20\)",
    ),
    (
        "guard_clear_above_max",
        {"guard": {"max_false_positive_rate": 0.1, "clear_false_positive_rate": 0.3}},
        ValueError,
        r"clear_false_positive_rate \(0\.3\) must be at most max_false_positive_rate \(0\.1\)",
    ),
]


@pytest.mark.parametrize(
    ("block", "error", "key"), [b[1:] for b in BAD_BLOCKS], ids=[b[0] for b in BAD_BLOCKS]
)
def test_bad_values_name_the_key(block: dict, error: type[Exception], key: str) -> None:
    with pytest.raises(error, match=key):
        RewardModelConfig.from_mapping(block)


def test_ints_are_accepted_for_floats_and_interpolations_resolve() -> None:
    cfg = OmegaConf.create({"log": "/tmp/x", "rm": {"timeout": 5, "episode_log_dir": "${log}"}})
    parsed = RewardModelConfig.from_mapping(cfg.rm)
    assert parsed.timeout == 5.0 and isinstance(parsed.timeout, float)
    assert parsed.episode_log_dir == "/tmp/x"


@pytest.mark.parametrize(
    ("endpoint", "endpoints"),
    [
        ("http://a/score", ("http://a/score",)),
        (["http://a/score", "http://b/score"], ("http://a/score", "http://b/score")),
    ],
    ids=["one", "replicas"],
)
def test_endpoint_is_one_url_or_a_list_of_replicas(endpoint: str | list[str], endpoints: tuple) -> None:
    from_yaml = OmegaConf.create({"reward_model": {"endpoint": endpoint}}).reward_model
    assert RewardModelConfig.from_mapping(from_yaml).endpoints == endpoints


API_KEYS = [
    ("no-variable-named", None, {}, None),
    ("variable-set", "REWARD_KEY", {"REWARD_KEY": " k1 "}, "k1"),
]


@pytest.mark.parametrize(("name", "environ", "key"), [k[1:] for k in API_KEYS], ids=[k[0] for k in API_KEYS])
def test_api_key_is_read_from_the_named_variable(name: str | None, environ: dict, key: str | None) -> None:
    assert RewardModelConfig(api_key_env=name).api_key(environ) == key


@pytest.mark.parametrize("environ", [{}, {"REWARD_KEY": ""}], ids=["unset", "empty"])
def test_a_named_variable_that_is_unset_or_empty_is_an_error(environ: dict) -> None:
    with pytest.raises(ValueError, match=r"REWARD_KEY.*unset or empty"):
        RewardModelConfig(api_key_env="REWARD_KEY").api_key(environ)


def test_the_guard_is_a_typed_block_that_replace_and_yaml_keep() -> None:
    from_yaml = OmegaConf.create(
        {"guard": {"enable": True, "action": "stop", "window": 8, "min_episodes": 4}}
    )
    parsed = RewardModelConfig.from_mapping(from_yaml)
    assert (parsed.guard.enable, parsed.guard.action, parsed.guard.window) == (True, "stop", 8)
    assert parsed.replace(canary_rate=0.5).guard == parsed.guard
    assert parsed.guard.clear_rate == 0.1, "half of max_false_positive_rate unless set"


def test_the_added_fields_describe_themselves() -> None:
    """The configuration reference is generated from these descriptions."""
    from vlm_reward.client.config import RewardGuardConfig

    added = ["health_window", "canary_rate", "canary_perturbations", "canary_max_per_chunk", "guard"]
    fields = [RewardModelConfig.model_fields[name] for name in added]
    fields += list(RewardGuardConfig.model_fields.values())
    assert all(f.description and "\n" not in f.description for f in fields)
