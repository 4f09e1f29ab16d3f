"""A server that cannot start says why at once, in one sentence, to every launcher.

A model path that does not exist (or has no config.json, or is of an unsupported family)
stops the server before it listens (exit 2, argparse's error line); a backend that fails to
load makes ``/health`` answer 503 ``backend_load_failed`` forever. The launchers
(:class:`vlm_reward.tools.server_process.RewardServerProcess`, which reward_eval, the test and
benchmark helpers use, and ``start_reward_server.sh``) report either as soon as it happens,
with the server's sentence, instead of waiting out their health timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.server import REPO, TEST_PLUGINS
from vlm_reward.tools.server_process import RewardServerProcess, ServerStartError, free_port

pytestmark = pytest.mark.slow

START_SCRIPT = REPO / "examples" / "embodiment" / "scripts" / "start_reward_server.sh"
MISSING = "/nonexistent/Qwen2.5-VL-7B-Instruct"
# Far above what a failure takes to report: passing quickly shows nobody waited for it.
PATIENCE_S = 120.0
QUICK_S = 30.0


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (
            ["--backend", "qwen_vl_hf", "--model", MISSING],
            f"model path '{MISSING}' does not exist; give a checkpoint directory holding config.json",
        ),
        (
            [
                "--backend",
                "fixed_score",
                "--model",
                "m",
                "--backend-kwargs",
                json.dumps({"load_error": "no weights"}),
            ],
            "backend 'fixed_score' failed to load: RuntimeError: no weights",
        ),
    ],
    ids=["missing-model-path-exits", "failed-load-answers-503"],
)
def test_the_launcher_reports_a_failed_start_at_once(tmp_path: Path, args: list[str], reason: str) -> None:
    server = RewardServerProcess(
        [*args, "--video-root", str(tmp_path)], tmp_path / "server.log", plugins=TEST_PLUGINS, repo=REPO
    )
    start = time.monotonic()
    try:
        with pytest.raises(ServerStartError) as excinfo:
            server.wait_ready(timeout=PATIENCE_S)
    finally:
        server.stop()
    assert time.monotonic() - start < QUICK_S
    assert reason in str(excinfo.value) and str(server.log_path) in str(excinfo.value)


def test_start_reward_server_sh_prints_the_reason_and_exits(tmp_path: Path) -> None:
    env = {**os.environ, "PORT": str(free_port()), "LOG_FILE": str(tmp_path / "server.log"), "WAIT_S": "600"}
    start = time.monotonic()
    result = subprocess.run(
        ["bash", str(START_SCRIPT), "qwen2_5_vl_hf", MISSING, "--video-root", str(tmp_path)],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1 and time.monotonic() - start < QUICK_S
    assert (
        f"exited before becoming ready: cannot start backend 'qwen2_5_vl_hf': model path '{MISSING}' "
        "does not exist" in result.stderr
    )
