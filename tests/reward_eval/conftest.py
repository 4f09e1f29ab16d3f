"""Fixtures of the reward-evaluation tests: one real evaluation run, shared by the session.

A LIBERO run costs about a minute here, so the job test and the re-scoring tests read the
same run dir instead of rolling out again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.server import REPO
from vlm_reward.protocol import API_KEY_ENV

RUN_TASK = 0
RUN_EPISODES = 2
RUN_MAX_STEPS = 8
EXPORTED_KEY = "a-key-the-user-exported"


@dataclass(frozen=True)
class EvalRun:
    """A finished ``reward_eval run``: its dir and what the command printed."""

    run_dir: Path
    returncode: int
    stdout: str
    stderr: str


def run_reward_eval(
    *args: str, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``python -m reward_eval ARGS`` in a fresh interpreter, as a user runs it (``env``: extra
    variables, e.g. an exported key)."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-m", "reward_eval", *args],
        cwd="/",  # the job must not depend on the working directory
        env={**os.environ, "PYTHONPATH": path, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="session")
def reward_eval_run(tmp_path_factory: pytest.TempPathFactory, tiny_qwen_checkpoint: str) -> EvalRun:
    """The job end to end: 1 task x 2 episodes on 2 envs, zero policy, local tiny-Qwen server.

    The user's environment exports a key (as the README's cluster recipe does): the local server
    must take the command's own key instead, so every episode is still judged.
    """
    run_dir = tmp_path_factory.mktemp("reward-eval") / "run"
    result = run_reward_eval(
        "run",
        *("--tasks", str(RUN_TASK), "--episodes-per-task", str(RUN_EPISODES), "--num-envs", "2"),
        *("--max-episode-steps", str(RUN_MAX_STEPS), "--chunk", "4", "--policy", "zero"),
        *("--backend", "qwen_vl_hf", "--model", tiny_qwen_checkpoint, "--out", str(run_dir)),
        env={API_KEY_ENV: EXPORTED_KEY},
    )
    return EvalRun(run_dir, result.returncode, result.stdout, result.stderr)
