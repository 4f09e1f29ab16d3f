"""``run_embodiment.sh --dry-run``: exit 0 for a working setup, a clear failure otherwise.

The working setup's dry run (the policy, the env, two judges in the endpoint list, an episode
scored) is one run, against the real vLLM engine and a second server:
``tests/vlm_reward/test_vllm_engine_e2e.py``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.required import require_tool
from tests.support.server import REPO, free_port

SCRIPTS = sorted(
    [*REPO.glob("scripts/*.sh"), *REPO.glob("examples/embodiment/scripts/*.sh"), REPO / ".ci/run"]
)
RUN = REPO / "examples" / "embodiment" / "scripts" / "run_embodiment.sh"


def _dry_run(tmp_path: Path, *overrides: str, **extra_env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "LOG_ROOT": str(tmp_path / "logs"), **extra_env}
    return subprocess.run(
        ["bash", str(RUN), "--dry-run", "libero_10_grpo_openvlaoft", *overrides],
        cwd="/",  # callable from any directory
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("script", SCRIPTS, ids=[str(s.relative_to(REPO)) for s in SCRIPTS])
def test_scripts_parse_and_pass_shellcheck(script: Path) -> None:
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=60)
    shellcheck = require_tool("shellcheck", "shellcheck")
    result = subprocess.run([shellcheck, str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout


def test_dry_run_fails_clearly_when_the_reward_server_is_down(tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}/score"
    result = _dry_run(
        tmp_path,
        "env.train.reward_model.enable=True",
        f"env.train.reward_model.endpoint={endpoint}",
        "actor.model.model_path=/nonexistent",  # the server is checked first: no checkpoint needed
    )
    assert result.returncode == 1
    assert f"reward server not reachable at {endpoint.removesuffix('/score')}/health" in result.stdout
    assert "start_reward_server.sh" in result.stderr + result.stdout
    assert "validated by rlinf" not in result.stdout, "found before Ray starts"
    [log] = (tmp_path / "logs").glob("*/run_embodiment.log")
    assert "dry_run.py" in log.read_text() and "FAILED" in log.read_text(), "the run is logged"


def test_dry_run_fails_on_a_checkpoint_that_is_not_there(tmp_path: Path) -> None:
    result = _dry_run(tmp_path, "actor.model.model_path=/nonexistent")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert "[dry-run] FAILED: actor.model.model_path /nonexistent is not a directory" in result.stdout
    assert "[dry-run] OK" not in result.stdout and "validated by rlinf" not in result.stdout, "before Ray"


def _cpu_smoke(tmp_path: Path, *overrides: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(RUN), "--cpu-smoke", *(["libero_10_grpo_openvlaoft", *overrides] if overrides else [])],
        cwd="/",
        env={**os.environ, "LOG_ROOT": str(tmp_path / "logs"), **env},
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_cpu_smoke_refuses_a_bad_timeout(tmp_path: Path) -> None:
    result = _cpu_smoke(tmp_path, CPU_SMOKE_TIMEOUT="soon")
    assert result.returncode == 2
    assert "CPU_SMOKE_TIMEOUT must be a whole number of seconds > 0, got 'soon'" in result.stderr


def test_cpu_smoke_stops_before_ray_when_the_hook_cannot_be_imported(tmp_path: Path) -> None:
    result = _cpu_smoke(tmp_path, RLINF_EXT_MODULE="examples.embodiment.no_such_hook", RAY_ADDRESS="auto")
    output = result.stdout + result.stderr
    assert result.returncode == 2, output[-3000:]
    assert "ignores RAY_ADDRESS=auto: it always starts a private Ray cluster" in output
    assert "not training" in output, "the run says it is a wiring check"
    assert (
        "[cpu-smoke] FAILED: RLINF_EXT_MODULE=examples.embodiment.no_such_hook cannot be imported" in output
    )
    assert "--cpu-smoke FAILED (exit status 2)" in output
    assert "[run_embodiment] Ray cluster" not in output, "it failed before starting Ray"
    [log] = (tmp_path / "logs").glob("*/run_embodiment.log")
    assert "+cpu_smoke=tiny" in log.read_text()


JUDGE = [
    "reward_server.enable=True",
    "env.train.reward_model.enable=True",
    "reward_server.gpus_per_replica=0",
]
MISSING_MODEL = ["reward_server.backend=qwen_vl_hf", "reward_server.model=/nonexistent/judge"]
TOO_MANY = [
    "reward_server.backend=qwen_vl_hf",
    "reward_server.model=Qwen/Qwen2.5-VL-3B-Instruct",  # a hub id: nothing to read before Ray
    "reward_server.replicas=2",
    "reward_server.cpus_per_replica=1000",
    "+cluster.component_placement.reward_server='0:0-1'",
]
# (id, mode, overrides, the sentence, whether Ray had to start to find it out)
BAD_JUDGES = [
    (
        "unknown_backend",
        "--dry-run",
        ["reward_server.backend=qwen_vl_nope", "reward_server.model=m"],
        "reward_server.backend: unknown backend 'qwen_vl_nope'",
        False,
    ),
    (
        "model_path_missing",
        "--dry-run",
        MISSING_MODEL,
        "reward_server.model: model path '/nonexistent/judge' does not exist",
        False,
    ),
    (
        "model_path_missing_training",
        "--cpu-smoke",
        MISSING_MODEL,
        "reward_server.model: model path '/nonexistent/judge' does not exist",
        False,
    ),
    (
        "more_replicas_than_the_cluster_can_place",
        "--dry-run",
        TOO_MANY,
        "2 replica(s) of 1000 CPU(s) each",
        True,
    ),
]


@pytest.mark.parametrize(
    ("mode", "overrides", "message", "needs_ray"), [b[1:] for b in BAD_JUDGES], ids=[b[0] for b in BAD_JUDGES]
)
def test_a_bad_reward_server_block_stops_the_run_before_training_in_one_sentence(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    mode: str,
    overrides: list[str],
    message: str,
    needs_ray: bool,
) -> None:
    if mode == "--dry-run":
        # The policy's files are checked before Ray too: a check that needs the cluster gets real ones.
        policy = request.getfixturevalue("tiny_oft_checkpoint") if needs_ray else "/nonexistent"
        overrides = [*JUDGE, *overrides, f"actor.model.model_path={policy}"]
        result = _dry_run(tmp_path, *overrides, RAY_ADDRESS="local")  # a private cluster if it starts one
        expected_code, prefix = 1, "[dry-run] FAILED: "
    else:
        result = _cpu_smoke(tmp_path, *JUDGE, *overrides)
        expected_code, prefix = 2, "[reward_server] FAILED: "
    output = result.stdout + result.stderr
    assert result.returncode == expected_code, output[-3000:]
    [failure] = [line for line in output.splitlines() if line.startswith(prefix)]
    assert message in failure and failure.endswith("."), failure
    assert "[dry-run] OK" not in output and "[cpu-smoke] OK" not in output
    assert ("validated by rlinf" in output) is needs_ray, (
        "found before Ray starts unless it needs the cluster"
    )
