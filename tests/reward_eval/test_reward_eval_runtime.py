"""The evaluation job asks ``vlm_reward.tools.runtime`` which interpreter runs its local server.

vLLM backends run on the vLLM venv when this interpreter has no vLLM, every Qwen2.5-VL
backend defaults to the tiny checkpoint, and a vLLM backend with no vLLM anywhere is an
argparse error before any rollout. A fake venv stands in for ``.venv-vllm``.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
from pathlib import Path

import pytest

from reward_eval.job import options
from reward_eval.judge import endpoint as judge
from tests.support.vllm_venv import fake_venv
from vlm_reward.tools import runtime
from vlm_reward.tools.server_process import START_TIMEOUT_S, RewardServerProcess, ServerStartError


@pytest.fixture
def no_vllm_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "has_vllm", lambda: False)


def _recording_python(venv: Path) -> Path:
    """Make the fake venv's python a script that records its arguments and one variable, then
    exits 3: a stand-in for the vLLM venv's interpreter that the job must start."""
    python = venv / "bin" / "python"
    script = ["#!/bin/sh", 'echo "$@" > "$(dirname "$0")/argv"']
    script += ['echo "$VLLM_CPU_KVCACHE_SPACE" >> "$(dirname "$0")/argv"', "exit 3"]
    python.write_text("\n".join(script) + "\n")
    python.chmod(0o755)
    return python


@pytest.mark.usefixtures("no_vllm_here")
def test_the_evaluation_job_starts_vllm_backends_on_the_vllm_venv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = fake_venv(tmp_path / "venv")
    python = _recording_python(venv)
    monkeypatch.setenv("VLLM_VENV", str(venv))
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    args = _scoring_args(["--backend", "PRIMO-R1", "--model", "/m", "--server-start-timeout", "60"])
    log = tmp_path / "server.log"
    with (
        pytest.raises(ServerStartError, match=re.escape(f"the reward server exited with 3; see {log}")),
        judge.scoring_endpoint(args, args.model, tmp_path / "videos", log),
    ):
        pytest.fail("a server that exits must not be yielded")
    argv, kv_cache = (python.parent / "argv").read_text().splitlines()
    assert argv.startswith("-m vlm_reward.libero_reward_server --host 127.0.0.1 --port ")
    assert argv.endswith(f"--backend PRIMO-R1 --model /m --video-root {tmp_path / 'videos'}")
    assert kv_cache == runtime.DEFAULT_CPU_KV_CACHE_GIB, "the CPU build gets a fixed KV cache"


def _scoring_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    options.add_scoring_options(parser, "the env YAML")
    args = parser.parse_args(argv)
    options.check_scoring_options(parser, args)
    return args


@pytest.mark.usefixtures("no_vllm_here")
@pytest.mark.parametrize("backend", ["qwen2_5_vl_hf", "qwen2_5_vl_vllm", "PRIMO-R1", "primo_r1_vllm"])
def test_qwen_backends_default_to_the_tiny_checkpoint(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_VENV", str(fake_venv(tmp_path / "venv")))
    args = _scoring_args(["--backend", backend])
    assert args.model is None and options.has_tiny_model(backend)


@pytest.mark.usefixtures("no_vllm_here")
def test_a_vllm_backend_without_any_vllm_fails_before_the_rollout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VLLM_VENV", str(tmp_path / "missing"))
    with pytest.raises(SystemExit) as exc:
        _scoring_args(["--backend", "qwen2_5_vl_vllm", "--model", "/m"])
    assert exc.value.code == 2 and "bash scripts/setup.sh" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "rescore", "audit", "finetune"])
def test_every_command_waits_for_its_servers_as_long_as_the_launcher(command: str) -> None:
    """``--server-start-timeout`` defaults to the launcher's own wait, defined once."""
    module = importlib.import_module(f"reward_eval.commands.{command}")
    launcher = inspect.signature(RewardServerProcess.wait_ready).parameters["timeout"].default
    assert module.build_parser().get_default("server_start_timeout") == launcher == START_TIMEOUT_S
