"""The evaluation job asks ``vlm_reward.runtime`` which interpreter runs its local server.

vLLM backends run on the vLLM venv when this interpreter has no vLLM, every Qwen2.5-VL
backend defaults to the tiny checkpoint, and a vLLM backend with no vLLM anywhere is an
argparse error before any rollout. A fake venv stands in for ``.venv-vllm``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from examples.embodiment.reward_eval import local_server, scoring_options
from tests.support.vllm_venv import fake_venv
from vlm_reward import runtime


@pytest.fixture
def no_vllm_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "has_vllm", lambda: False)


@pytest.mark.usefixtures("no_vllm_here")
def test_the_evaluation_job_starts_vllm_backends_on_the_vllm_venv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = fake_venv(tmp_path / "venv")
    monkeypatch.setenv("VLLM_VENV", str(venv))
    cmd = local_server.server_command("PRIMO-R1", "/m", 1234, tmp_path)
    assert cmd[:3] == [str(venv / "bin" / "python"), "-m", "vlm_reward.libero_reward_server"]
    assert local_server.server_command("qwen2_5_vl_hf", "/m", 1234, tmp_path)[0] == sys.executable
    assert local_server.server_command("PRIMO-R1", "/m", 1, tmp_path, python="/x/python")[0] == "/x/python"


def _scoring_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    scoring_options.add_scoring_options(parser, "the env YAML")
    args = parser.parse_args(argv)
    scoring_options.check_scoring_options(parser, args)
    return args


@pytest.mark.usefixtures("no_vllm_here")
@pytest.mark.parametrize("backend", ["qwen2_5_vl_hf", "qwen2_5_vl_vllm", "PRIMO-R1", "primo_r1_vllm"])
def test_qwen_backends_default_to_the_tiny_checkpoint(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_VENV", str(fake_venv(tmp_path / "venv")))
    args = _scoring_args(["--backend", backend])
    assert args.model is None and scoring_options.has_tiny_model(backend)


@pytest.mark.usefixtures("no_vllm_here")
def test_a_vllm_backend_without_any_vllm_fails_before_the_rollout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VLLM_VENV", str(tmp_path / "missing"))
    with pytest.raises(SystemExit) as exc:
        _scoring_args(["--backend", "qwen2_5_vl_vllm", "--model", "/m"])
    assert exc.value.code == 2 and "bash scripts/setup.sh" in capsys.readouterr().err
