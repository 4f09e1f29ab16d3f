"""vlm_reward.server.cli: every flag is one field of a settings class, with that field's default.

The server's flags, their defaults and their help are written on the settings classes' fields
(vlm_reward.settings_flags); cli.py only lays them out. These tests keep it that way: a flag
added by hand, a field without a flag, or a default written in cli.py fails here.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
from pathlib import Path

import pytest

from vlm_reward.protocol import API_KEY_ENV
from vlm_reward.server import cli
from vlm_reward.server.config import ServerConfig
from vlm_reward.server.launch import LaunchSettings
from vlm_reward.server.limits import RequestLimits
from vlm_reward.server.self_test import SelfTestSettings
from vlm_reward.server.serving import ServingOptions
from vlm_reward.settings_flags import field_default, flag_fields, option, read

SETTINGS = (ServerConfig, ServingOptions, RequestLimits, SelfTestSettings, LaunchSettings)
# The fields that are not flags, each for its reason: settings classes of their own, and the
# API keys, which come from $VLM_REWARD_API_KEY or --api-key-file (a flag would show them in ps).
NOT_FLAGS = {(ServerConfig, "limits"), (ServerConfig, "self_test"), (ServerConfig, "api_keys")}


def _actions() -> dict[str, argparse.Action]:
    parser = cli.build_parser()
    return {flag: action for action in parser._actions for flag in action.option_strings}


def _fields() -> list[tuple[type, dataclasses.Field]]:
    return [(cls, f) for cls in SETTINGS for f in dataclasses.fields(cls)]


@pytest.mark.parametrize(
    ("cls", "field"), _fields(), ids=[f"{cls.__name__}.{f.name}" for cls, f in _fields()]
)
def test_every_field_has_one_flag_whose_default_is_the_fields(cls: type, field: dataclasses.Field) -> None:
    if (cls, field.name) in NOT_FLAGS:
        assert field not in flag_fields(cls)
        return
    action = _actions()[option(field)]
    # --self-test [DIR]: absent is "no self-test" (None); given alone, it takes the field's default.
    default = action.const if action.nargs == "?" else action.default
    expected = field_default(field)
    assert default == expected if expected is not dataclasses.MISSING else action.required


def test_every_flag_is_one_field_laid_out_once() -> None:
    owners: dict[str, list[str]] = {}
    for cls, field in _fields():
        if (cls, field.name) not in NOT_FLAGS:
            owners.setdefault(option(field), []).append(f"{cls.__name__}.{field.name}")
    flags = [flag for flag in _actions() if flag not in ("-h", "--help")]
    assert sorted(flags) == sorted(owners), "a flag without a field, or a field without a flag"
    assert all(len(fields) == 1 for fields in owners.values()), owners
    laid_out = [
        (cls, name) for _, cls, names in cli.LAYOUT for name in names or [f.name for f in flag_fields(cls)]
    ]
    assert len(laid_out) == len(set(laid_out)) == len(owners)


def _literal(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp):
        return _literal(node.operand)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return all(_literal(item) for item in node.elts)
    if isinstance(node, ast.Dict):
        return all(_literal(item) for item in [*node.keys, *node.values] if item is not None)
    return isinstance(node, ast.Constant)


def test_the_cli_module_writes_no_default_and_adds_no_flag_by_hand() -> None:
    tree = ast.parse(Path(cli.__file__).read_text())
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    literal_defaults = [
        f"line {call.lineno}: {kw.arg}={ast.unparse(kw.value)}"
        for call in calls
        for kw in call.keywords
        if kw.arg in ("default", "const") and _literal(kw.value)
    ]
    assert not literal_defaults
    by_hand = [call.lineno for call in calls if getattr(call.func, "attr", None) == "add_argument"]
    assert not by_hand, f"add_argument in cli.py at lines {by_hand}: declare the flag on a settings field"


def test_no_flags_but_the_model_give_every_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    config, args = cli.parse_config(["--model", "m"])
    assert config == ServerConfig(model="m")
    assert read(ServingOptions, args) == ServingOptions()
    assert read(LaunchSettings, args) == LaunchSettings()


FLAGS = [
    ("backend", ["--backend", "qwen_vl_hf"], ServerConfig, "backend", "qwen_vl_hf"),
    (
        "kwargs",
        ["--backend-kwargs", '{"prompt": "yes_no"}'],
        ServerConfig,
        "backend_kwargs",
        {"prompt": "yes_no"},
    ),
    ("no-metrics", ["--no-metrics"], ServerConfig, "metrics", False),
    ("body", ["--body-timeout", "5"], ServerConfig, "body_timeout_s", 5.0),
    ("header", ["--header-timeout", "2.5"], ServingOptions, "header_timeout_s", 2.5),
    ("drain", ["--drain-timeout", "0"], ServingOptions, "drain_timeout_s", 0.0),
    ("port", ["--port", "9000"], ServingOptions, "port", 9000),
    ("cap", ["--max-nframes", "8"], RequestLimits, "max_nframes", 8),
    ("log", ["--log-level", "debug"], LaunchSettings, "log_level", "debug"),
]


@pytest.mark.parametrize(("argv", "cls", "name", "value"), [f[1:] for f in FLAGS], ids=[f[0] for f in FLAGS])
def test_a_flag_sets_its_field_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], cls: type, name: str, value: object
) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    config, args = cli.parse_config(["--model", "m", *argv])
    built = {ServerConfig: config, RequestLimits: config.limits}.get(cls) or read(cls, args)
    assert built == dataclasses.replace(
        cls(**({"model": "m"} if cls is ServerConfig else {})), **{name: value}
    )


def test_the_self_test_is_off_without_its_flag_and_the_shipped_set_with_it_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    assert cli.parse_config(["--model", "m", "--self-test-threshold", "0.7"])[0].self_test is None
    config, _ = cli.parse_config(["--model", "m", "--self-test", "--self-test-threshold", "0.7"])
    assert config.self_test == SelfTestSettings(threshold=0.7)
