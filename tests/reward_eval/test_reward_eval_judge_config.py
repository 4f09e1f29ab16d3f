"""reward_eval.job.judge_config: the job's own keys and what a re-judged run keeps."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from reward_eval.job.judge_config import JudgeSettings, job_keys, judged_run_settings, source_run_values
from reward_eval.job.reward_block import JOB_KEYS, ResolvedBlock
from reward_eval.job.settings import ENDPOINT_MODEL, RunSettings
from reward_eval.judge.endpoint import DEFAULT_LOCAL_BACKEND, JudgeEndpoint
from vlm_reward.client.episode_record import EpisodeRecord

JUDGE = JudgeEndpoint("http://127.0.0.1:9/score", "VLM_REWARD_LOCAL_KEY")

# (id, --endpoint, --backend, the backend the job owns: None when it owns none)
BACKENDS = [
    ("local_default", None, None, DEFAULT_LOCAL_BACKEND),
    ("endpoint_own", "http://gpu:18080/score", None, None),
    ("given", None, "PRIMO-R1", "not owned"),
]


@pytest.mark.parametrize(
    ("endpoint", "backend", "owned"), [b[1:] for b in BACKENDS], ids=[b[0] for b in BACKENDS]
)
def test_the_job_never_asks_for_the_yaml_s_serving_backend(
    endpoint: str | None, backend: str | None, owned: Any
) -> None:
    keys = job_keys(argparse.Namespace(endpoint=endpoint, backend=backend), JUDGE, use_for_training=True)
    assert set(JOB_KEYS) <= set(keys) and keys["endpoint"] == JUDGE.url and keys["use_for_training"] is True
    assert keys.get("backend", "not owned") == owned


def _record(threshold: float, binary: bool) -> EpisodeRecord:
    return EpisodeRecord.from_json(
        {
            "task_id": 0,
            "native_success": True,
            "vlm_score": 0.7,
            "success_threshold": threshold,
            "binary_reward": binary,
        }
    )


def test_a_recorded_run_gives_its_block_and_an_older_one_its_records() -> None:
    recorded = RunSettings(
        reward_model={"nframes": 12, "score_mode": "rubric", "timeout": 9.0, "backend": "x"}
    )
    assert source_run_values(recorded, []) == {
        "backend_kwargs": None,
        "score_mode": "rubric",
        "nframes": 12,
        "success_threshold": None,
        "binary_reward": None,
    }, "only the keys a re-judged run keeps"
    older = source_run_values(RunSettings(), [_record(0.3, False), _record(0.3, False)])
    assert older == {"success_threshold": 0.3, "binary_reward": False}
    mixed = source_run_values(RunSettings(), [_record(0.3, False), _record(0.6, False)])
    assert mixed["success_threshold"] is None, "records that disagree say nothing"


def _judged(backend: str | None) -> JudgeSettings:
    block = ResolvedBlock({"enable": True, "backend": backend}, {"enable": "job", "backend": "option"})
    return JudgeSettings(block, Path("/env.yaml"), "default")


@pytest.mark.parametrize(
    ("endpoint", "model"),
    [(None, "/models/judge"), ("http://gpu/score", ENDPOINT_MODEL)],
    ids=["local-server-model", "given-endpoint-the-server-s"],
)
def test_a_judged_run_records_its_options_then_its_judge_and_block(endpoint: str | None, model: str) -> None:
    args = argparse.Namespace(endpoint=endpoint, tasks=[0, 1], backend=None, policy_obj=object(), out="RUN")
    settings = judged_run_settings(
        "run",
        args,
        model="/models/judge",
        random_model=True,
        judge=JUDGE,
        judged=_judged("resnet"),
        skip=("policy_obj",),
        reset_state_ids=[3, 4],
    )
    assert (settings.command, settings.backend, settings.model) == ("run", "resnet", model)
    assert (settings.random_model, settings.endpoint) == (True, JUDGE.url)
    assert (settings.env_config, settings.env_config_source) == ("/env.yaml", "default")
    assert settings.reward_model_sources == {"enable": "job", "backend": "option"}
    assert settings.details == {"tasks": [0, 1], "out": "RUN", "reset_state_ids": [3, 4]}
