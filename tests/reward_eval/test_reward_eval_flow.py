"""The judge measured is the judge trained: every path that judges asks what the env YAML says.

One env YAML (:func:`flow_config`) sets every judge-facing ``reward_model`` key (the fields tagged
in ``RewardModelConfig``: :func:`judge_facing_keys`) to a value other than its default, and the
success threshold too. Each path that judges an episode runs once against the recording stand-in
judge (the real server with the ``wire_recorder`` backend: it records each job as the server
parsed it off the wire), and every job must carry the YAML's values; each command is also given
``--backend-kwargs '{"prompt": "yes_no"}'``, which must replace the YAML's prompt and keep its
other ``backend_kwargs``. The paths:

- the training env's client: the training config composing the YAML as ``env.train`` (Hydra, as
  ``run_embodiment.sh`` does), the client the env builds from that block;
- ``run``'s episodes (LiberoEnv's own client, the real simulator) and ``run``'s own audit: the
  session's expert run (:func:`expert_run`);
- ``rescore``, ``audit`` and ``finetune`` (its training inputs and its served base and fine-tuned
  judges) on that run, with no ``--env-config``: the run's recorded YAML;
- the server's self-test, started by ``start_reward_server.sh`` with ``ENV_CONFIG``;
- ``--dry-run``'s plan, printed (the same keys as Hydra overrides of the training config).

The intended exceptions, one per path at most, are listed in :data:`EXCEPTIONS`; any other miss
fails naming the key and the path. ``nframes`` is asked as ``min(nframes, the video's frames)``
everywhere (a counterfactual cut in half has half the frames).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reward_eval.exit_statuses import EXIT_SERVING_SKEW
from tests.reward_eval.conftest import (
    FLOW_OPTION,
    FLOW_REWARD_MODEL,
    FLOW_THRESHOLD,
    EvalRun,
    FlowConfig,
    run_reward_eval,
)
from tests.support.server import REPO, free_port
from tests.support.wire_backends import WireRecorder
from vlm_reward.client.config import RewardModelConfig, judge_facing_keys

pytestmark = [pytest.mark.libero, pytest.mark.slow]


@pytest.fixture(scope="module")
def wire_recorder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WireRecorder]:
    """The recording stand-in judge of the paths after the run; it reads videos anywhere under
    the session's temp dir."""
    recorder = WireRecorder(tmp_path_factory.mktemp("wire"), tmp_path_factory.getbasetemp())
    try:
        yield recorder
    finally:
        recorder.stop()


# Per path, what it may ask differently, and why; nothing else may differ.
EXCEPTIONS: dict[str, dict[str, Any]] = {
    # The fine-tune trains and serves the probability readout, whatever the YAML's score mode.
    "finetune training inputs": {"score_mode": "probability"},
    "finetune served judges": {"score_mode": "probability"},
}


def expected(path: str, option: bool = True) -> dict[str, Any]:
    """What every job of ``path`` must ask (``nframes`` aside): the YAML's values, the option's prompt."""
    kwargs = {**FLOW_REWARD_MODEL["backend_kwargs"], **(FLOW_OPTION if option else {})}
    return {**FLOW_REWARD_MODEL, "backend_kwargs": kwargs, **EXCEPTIONS.get(path, {})}


def misses(path: str, jobs: list[dict[str, Any]], want: dict[str, Any]) -> list[str]:
    """Each judge-facing key a job of ``path`` asked otherwise than ``want``, in one line each."""
    found = []
    for index, job in enumerate(jobs):
        for key in judge_facing_keys():
            value = min(want[key], job["video_frames"]) if key == "nframes" else want[key]
            if job[key] != value:
                found.append(f"{path}, job {index}: {key} {job[key]!r}, the YAML says {value!r}")
    return found


def assert_asked_as_the_yaml_says(path: str, jobs: list[dict[str, Any]], option: bool = True) -> None:
    assert jobs, f"{path}: no call reached the judge"
    problems = misses(path, jobs, expected(path, option))
    assert not problems, "\n".join(problems)


def test_the_yaml_sets_every_judge_facing_key_off_its_default() -> None:
    defaults = RewardModelConfig()
    assert set(FLOW_REWARD_MODEL) == set(judge_facing_keys()), "a newly tagged key needs a value here"
    assert all(getattr(defaults, key) != value for key, value in FLOW_REWARD_MODEL.items())
    assert defaults.success_threshold != FLOW_THRESHOLD


def test_the_training_env_s_client(
    flow_config: FlowConfig, wire_recorder: WireRecorder, tmp_path: Path
) -> None:
    from hydra import compose, initialize_config_dir

    from reward_eval.job.paths import CONFIG_ROOT
    from vlm_reward.client.scoring import FinishedEpisode, RewardClient

    overrides = [
        f"hydra.searchpath=[file://{CONFIG_ROOT}]",
        "env.train.reward_model.enable=True",
        f"env.train.reward_model.endpoint={wire_recorder.endpoint}",
        "env.train.reward_model.backend=wire_recorder",
        f"env.train.reward_model.temp_video_dir={tmp_path}",  # under the judge's --video-root
    ]
    with initialize_config_dir(config_dir=str(flow_config.root), version_base="1.1"):
        cfg = compose("train", overrides=overrides)
    wire_recorder.take()
    client = RewardClient(RewardModelConfig.from_mapping(cfg.env.train.reward_model))
    try:
        frames = [np.full((64, 64, 3), i * 10, dtype=np.uint8) for i in range(20)]
        result = client.score(FinishedEpisode("put the bowl on the plate", frames, native_success=False))
    finally:
        client.close()
    assert not result.fallback, result.error
    assert_asked_as_the_yaml_says("training env", wire_recorder.take(), option=False)


def test_run_s_episodes_and_its_own_audit(expert_run: EvalRun) -> None:
    settings = json.loads((expert_run.run_dir / "settings.json").read_text())
    episodes, audit = list(expert_run.jobs[:3]), list(expert_run.jobs[3:])
    assert_asked_as_the_yaml_says("run episodes", episodes)
    assert_asked_as_the_yaml_says("run's audit", audit)
    assert len(audit) == json.loads((expert_run.run_dir / "audit" / "audit.json").read_text())["calls"]
    sources = settings["reward_model_sources"]
    assert {key: sources[key] for key in ("nframes", "score_mode", "success_threshold")} == dict.fromkeys(
        ("nframes", "score_mode", "success_threshold"), "env_yaml"
    )
    assert (sources["backend_kwargs.prompt"], sources["backend_kwargs.max_new_tokens"]) == (
        "option",
        "env_yaml",
    )
    assert (settings["env_config_source"], settings["reward_model"]["success_threshold"]) == (
        "option",
        FLOW_THRESHOLD,
    )


@pytest.mark.parametrize("command", ["rescore", "audit"])
def test_rejudging_a_run_asks_what_it_was_asked(
    command: str, expert_run: EvalRun, wire_recorder: WireRecorder, tmp_path: Path
) -> None:
    wire_recorder.take()
    result = run_reward_eval(
        command,
        str(expert_run.run_dir),
        *("--endpoint", wire_recorder.endpoint, "--backend-kwargs", json.dumps(FLOW_OPTION)),
        *("--out", str(tmp_path / command)),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert_asked_as_the_yaml_says(command, wire_recorder.take())


def test_finetune_trains_and_serves_what_the_env_asks(
    expert_run: EvalRun, tiny_qwen_checkpoint: str, tmp_path: Path
) -> None:
    log = tmp_path / "served.jsonl"
    out = tmp_path / "judge"
    result = run_reward_eval(
        *("finetune", str(expert_run.run_dir), "--model", tiny_qwen_checkpoint, "--out", str(out)),
        *("--backend", "wire_recorder", "--plugin", "tests.support.wire_backends"),
        *("--server-kwargs", json.dumps({"log_path": str(log)}), "--backend-kwargs", json.dumps(FLOW_OPTION)),
        *("--counterfactuals", "reversed"),  # the fewest examples that train past the class prior
    )
    # The served "fine-tuned judge" is the recorder (P(yes) 0.7 for every video), not the trained
    # weights: the fine-tune's check of itself must catch it (exit 5) after judging everything.
    assert result.returncode == EXIT_SERVING_SKEW, result.stdout[-3000:] + result.stderr[-3000:]
    assert (
        "fine-tune check failed: the served fine-tuned judge answers its training examples" in result.stderr
    )
    request = json.loads((out / "finetune.json").read_text())["hyper_parameters"]["request"]
    assert_asked_as_the_yaml_says(
        "finetune training inputs", [{**request, "video_frames": request["nframes"]}]
    )
    served = [json.loads(line) for line in log.read_text().splitlines()]
    assert_asked_as_the_yaml_says("finetune served judges", served)


def test_the_self_test_is_asked_and_graded_as_the_env(
    flow_config: FlowConfig, wire_recorder: WireRecorder, tmp_path: Path
) -> None:
    """``start_reward_server.sh`` with ``ENV_CONFIG``: the recorder answers 0.5 for every case in
    rubric mode, so at the YAML's threshold (0.6) it misjudges the set's 4 successes, at the
    default (0.5) its 6 failures."""
    log = tmp_path / "self_test.jsonl"
    script = REPO / "examples" / "embodiment" / "scripts" / "start_reward_server.sh"
    env = {**os.environ, "PORT": str(free_port()), "LOG_FILE": str(tmp_path / "server.log"), "WAIT_S": "60"}
    env["ENV_CONFIG"] = str(flow_config.env_yaml)
    flags = ["--plugin", "tests.support.wire_backends", "--self-test"]
    flags += ["--backend-kwargs", json.dumps({"log_path": str(log)})]
    result = subprocess.run(
        ["bash", str(script), "wire_recorder", "none", *flags],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1 and "misjudged 4 of 10" in result.stderr, result.stdout + result.stderr
    jobs = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(jobs) == 10
    assert_asked_as_the_yaml_says("self-test", jobs, option=False)


def hydra_value(value: Any) -> str:
    """``value`` as a Hydra override writes it (``{prompt:roboreward,max_new_tokens:5}``)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{hydra_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def test_the_dry_run_prints_what_the_env_asks_and_the_replicas_self_test(
    tmp_path: Path, tiny_oft_checkpoint: str
) -> None:
    block = {**FLOW_REWARD_MODEL, "success_threshold": FLOW_THRESHOLD}
    overrides = [f"++env.train.reward_model.{key}={hydra_value(value)}" for key, value in block.items()]
    judge = [
        *(
            "reward_server.enable=True",
            "env.train.reward_model.enable=True",
            "reward_server.gpus_per_replica=0",
        ),
        *("reward_server.backend=qwen_vl_hf", "reward_server.replicas=2", "reward_server.cpus_per_replica=0"),
        "reward_server.model=Qwen/Qwen2.5-VL-3B-Instruct",  # a hub id: nothing is loaded by a dry run
        "+cluster.component_placement.reward_server={node_group:node,placement:'0:0-1'}",  # as on GPU nodes
    ]
    # A checkpoint whose files pass the checks before Ray but that holds no weights: the weights'
    # check, right after the plan, ends the run before any env is built.
    weightless = tmp_path / "weightless-oft"
    shutil.copytree(tiny_oft_checkpoint, weightless, ignore=shutil.ignore_patterns("*.safetensors*"))
    run = REPO / "examples" / "embodiment" / "scripts" / "run_embodiment.sh"
    command = ["bash", str(run), "--dry-run", "libero_10_grpo_openvlaoft", *judge, *overrides]
    env = {**os.environ, "LOG_ROOT": str(tmp_path / "logs"), "RAY_ADDRESS": "local"}
    result = subprocess.run(
        [*command, f"actor.model.model_path={weightless}"],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    [asks] = [line for line in lines if line.startswith("[dry-run] the env asks the judge: ")]
    for key, value in FLOW_REWARD_MODEL.items():
        assert f"{key} {json.dumps(value)}" in asks, f"--dry-run: {key} not as the YAML says: {asks}"
    assert asks.endswith(f"; a success at score >= {FLOW_THRESHOLD:g}")
    plan = [line for line in lines if line.startswith("[dry-run] reward_server: ")]
    assert plan[0].startswith("[dry-run] reward_server: 2 replica(s) of qwen_vl_hf serving")
    flags = shlex.split(plan[3].split(": ", 2)[2])
    assert flags[flags.index("--self-test-threshold") + 1] == repr(FLOW_THRESHOLD)
    assert json.loads(flags[flags.index("--self-test-request") + 1]) == FLOW_REWARD_MODEL
    assert "the plan fits the cluster; the run starts the replicas (not --dry-run)" in plan[4]
    assert f"[dry-run] FAILED: the checkpoint at {weightless} has no model.safetensors" in result.stdout
    assert "reward_server] replica 0 ready" not in result.stdout + result.stderr, "nothing was started"
