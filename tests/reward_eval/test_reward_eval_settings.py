"""``settings.json`` as :class:`RunSettings`: one writer and reader for every command."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from reward_eval.job.settings import ENDPOINT_MODEL, UNKNOWN, RunSettings


def test_options_and_what_was_resolved_are_written_flat_and_read_back(tmp_path: Path) -> None:
    options = vars(argparse.Namespace(tasks=[0, 1], out=tmp_path / "run", backend=None, policy_obj=object()))
    settings = RunSettings.from_options(
        "run",
        options,
        skip=("policy_obj",),
        backend="qwen_vl_hf",
        model="/m/tiny",
        random_model=True,
        endpoint="http://127.0.0.1:1/score",
        env_config="/cfg/libero_10.yaml",
        env_config_source="default",
        reward_model={"nframes": 12, "backend_kwargs": {"prompt": "yes_no"}},
        reward_model_sources={"nframes": "env_yaml", "backend_kwargs.prompt": "option"},
        reset_state_ids=[0, 1],
    )
    settings.write(tmp_path)
    flat = json.loads((tmp_path / "settings.json").read_text())
    assert flat == {
        "command": "run",
        "tasks": [0, 1],
        "out": str(tmp_path / "run"),
        "reset_state_ids": [0, 1],
        "backend": "qwen_vl_hf",
        "model": "/m/tiny",
        "random_model": True,
        "endpoint": "http://127.0.0.1:1/score",
        "env_config": "/cfg/libero_10.yaml",
        "env_config_source": "default",
        "reward_model": {"nframes": 12, "backend_kwargs": {"prompt": "yes_no"}},
        "reward_model_sources": {"nframes": "env_yaml", "backend_kwargs.prompt": "option"},
    }
    assert RunSettings.read(tmp_path) == settings


def test_a_run_dir_without_settings_reads_as_unknown(tmp_path: Path) -> None:
    assert RunSettings.read(tmp_path) is UNKNOWN
    assert (UNKNOWN.random_model, UNKNOWN.env_config, UNKNOWN.serves("/m/tiny")) == (False, None, False)


def test_an_older_settings_file_reads_with_unknown_keys_kept(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text(json.dumps({"model": ENDPOINT_MODEL, "threshold": 0.4}))
    settings = RunSettings.read(tmp_path)
    assert (settings.command, settings.model, settings.random_model) == (None, ENDPOINT_MODEL, False)
    assert settings.details == {"threshold": 0.4}


def test_derived_settings_keep_the_judge_and_add_details() -> None:
    source = RunSettings(command="run", backend="qwen_vl_hf", model="/m", random_model=True, details={"a": 1})
    report = source.derived("report", threshold=0.3)
    assert (report.command, report.backend, report.random_model) == ("report", "qwen_vl_hf", True)
    assert report.details == {"a": 1, "threshold": 0.3}


@pytest.mark.parametrize(
    ("model", "expected"),
    [("/m/tiny", True), ("/m/../m/tiny", True), ("/m/real", False), (None, False)],
    ids=["same", "same-other-spelling", "other", "none"],
)
def test_serves_compares_resolved_paths(model: str | None, expected: bool) -> None:
    assert RunSettings(model="/m/tiny").serves(model) is expected
