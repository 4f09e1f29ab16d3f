"""Fixtures of the reward-evaluation tests: real evaluation runs, shared by the session.

A LIBERO run costs about a minute here, so the tests read the same run dirs instead of rolling
out again:

- :func:`reward_eval_run`: the zero policy, 1 task x 2 episodes, a local tiny-Qwen server (the
  job test, rescore, the audit, the fine-tune's failures);
- :func:`expert_run`: the scripted expert, task 0, trials 0-2 on three envs in one batch,
  ``drop: carry`` with ``drop_prob`` 0.5 and policy seed 3, which drops the second episode only:
  two successes (316 and 333 steps) and a near miss (truncated at 344). The expert reads the
  simulator's state, not images, so no camera renders its steps: only the judge's frames are
  rendered, at 128x128 from the recorded states (the ``simulation`` block's ``cameras: False``;
  the same episodes in 41 s instead of 120 s with 128-px cameras). Made with the flow-through
  test's env YAML (:func:`flow_config`: every judge-facing ``reward_model`` key off its default)
  and judged, with its own audit, by a recording stand-in judge (``tests.support.wire_backends``),
  which keeps the jobs of both (``EvalRun.jobs``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from tests.support.server import REPO
from tests.support.wire_backends import WireRecorder
from vlm_reward.protocol import API_KEY_ENV

RUN_TASK = 0
RUN_EPISODES = 2
RUN_MAX_STEPS = 8
EXPORTED_KEY = "a-key-the-user-exported"
EXPERT_TASK = 0
EXPERT_EPISODES = 3
EXPERT_SEED = 3  # drop draws of seed 3: the 2nd episode drops, the 1st and 3rd do not
EXPERT_MAX_STEPS = 344
EXPERT_CAMERA = 128
# The flow-through test's env YAML: its judge-facing reward_model keys (judge_facing_keys()) all
# set off their defaults, its success threshold too; every path that judges must send these.
# nframes is above the default 16, so the kept videos let the fine-tune's tests ask the default request.
FLOW_REWARD_MODEL: dict[str, Any] = {
    "nframes": 20,
    "max_pixels": 12544,
    "video_fps": 5.0,
    "native_frame_size": True,
    "score_mode": "rubric",
    "backend_kwargs": {"prompt": "roboreward", "max_new_tokens": 5},
}
FLOW_THRESHOLD = 0.6
# The option each command is given on top of it: it replaces the YAML's prompt and keeps the rest.
FLOW_OPTION = {"prompt": "yes_no"}


@dataclass(frozen=True)
class EvalRun:
    """A finished ``reward_eval run``: its dir, what the command printed, and (against the
    recording judge) the jobs its calls asked for, in order."""

    run_dir: Path
    returncode: int
    stdout: str
    stderr: str
    jobs: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class FlowConfig:
    """The flow-through env YAML (``root/env/flow.yaml``, which includes the repo's libero_10.yaml)
    and a training config composing it as ``env.train`` (``root/train.yaml``); the expert run's
    YAML is the same with no camera (``root/env/flow_expert.yaml``)."""

    root: Path
    env_yaml: Path
    expert_yaml: Path


@pytest.fixture(scope="session")
def flow_config(tmp_path_factory: pytest.TempPathFactory) -> FlowConfig:
    """See :class:`FlowConfig`: libero_10.yaml at 128 px with :data:`FLOW_REWARD_MODEL`."""
    root = tmp_path_factory.mktemp("flow-config")
    (root / "env").mkdir()
    block = {**FLOW_REWARD_MODEL, "success_threshold": FLOW_THRESHOLD}
    env = {
        "defaults": ["/env/libero_10@_here_", "_self_"],
        "init_params": {"camera_heights": EXPERT_CAMERA, "camera_widths": EXPERT_CAMERA},
        "reward_model": block,
    }
    OmegaConf.save(OmegaConf.create(env), root / "env" / "flow.yaml")
    no_camera = {"cameras": False, "judge_frame_size": EXPERT_CAMERA}
    OmegaConf.save(OmegaConf.create({**env, "simulation": no_camera}), root / "env" / "flow_expert.yaml")
    OmegaConf.save(OmegaConf.create({"defaults": ["/env/flow@env.train", "_self_"]}), root / "train.yaml")
    return FlowConfig(root, root / "env" / "flow.yaml", root / "env" / "flow_expert.yaml")


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

    The user's environment exports a key (as the cluster recipe of docs/server/security.md does): the
    local server must take the command's own key instead, so every episode is still judged.
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


@pytest.fixture(scope="session")
def expert_run(tmp_path_factory: pytest.TempPathFactory, flow_config: FlowConfig) -> EvalRun:
    """The expert's successes and near miss (see the module docstring), kept videos, its own audit,
    judged by a recording judge (stopped after) with the flow-through YAML and ``--backend-kwargs``
    :data:`FLOW_OPTION`."""
    root = tmp_path_factory.mktemp("expert-run")
    recorder = WireRecorder(root, tmp_path_factory.getbasetemp())
    try:
        result = run_reward_eval(
            "run",
            *("--tasks", str(EXPERT_TASK), "--episodes-per-task", str(EXPERT_EPISODES), "--num-envs", "3"),
            *("--max-episode-steps", str(EXPERT_MAX_STEPS), "--policy", "expert"),
            *("--policy-seed", str(EXPERT_SEED), "--policy-kwargs", '{"drop": "carry", "drop_prob": 0.5}'),
            *("--env-config", str(flow_config.expert_yaml), "--endpoint", recorder.endpoint),
            *("--backend", "wire_recorder", "--backend-kwargs", json.dumps(FLOW_OPTION)),
            *("--out", str(root / "run")),
        )
        jobs = tuple(recorder.take())
    finally:
        recorder.stop()
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return EvalRun(root / "run", result.returncode, result.stdout, result.stderr, jobs)
