"""``reward_eval run --backend qwen2_5_vl_vllm`` with no ``--model``: the tiny checkpoint on vLLM.

The job runs in the main venv, which has no vLLM; it builds the tiny checkpoint into the run
dir (with transformers 4.57) and starts its local server on the vLLM venv's interpreter,
where vLLM (with transformers 5) loads it. One LIBERO episode, zero policy, greedy seeded
model: the outcome is pinned, and it is the transformers backend's on the same episode
(``test_reward_eval_job.py``: the shared run's first score).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.reward_eval.conftest import RUN_MAX_STEPS, RUN_TASK, run_reward_eval
from tests.support.setup_steps import WAITING_TEST_TIMEOUT_S
from tests.support.vllm_venv import TEST_ENGINE_KWARGS, engine_calls, require_vllm_python

pytestmark = [
    pytest.mark.timeout(WAITING_TEST_TIMEOUT_S),
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.libero,
]

SCORE = 0.4633  # as the transformers backend scores this episode (test_reward_eval_job.SHARED_RUN_SCORES)


def test_job_scores_on_the_vllm_engine_with_the_tiny_checkpoint(tmp_path: Path) -> None:
    require_vllm_python()
    run_dir = tmp_path / "run"
    result = run_reward_eval(
        "run",
        *("--tasks", str(RUN_TASK), "--episodes-per-task", "1", "--num-envs", "1"),
        *("--max-episode-steps", str(RUN_MAX_STEPS), "--chunk", "4", "--policy", "zero"),
        *("--backend", "qwen2_5_vl_vllm", "--server-kwargs", json.dumps(TEST_ENGINE_KWARGS)),
        *("--backend-kwargs", '{"max_new_tokens": 12}', "--out", str(run_dir)),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    settings = json.loads((run_dir / "settings.json").read_text())
    assert settings["backend"] == "qwen2_5_vl_vllm" and settings["random_model"] is True
    assert Path(settings["model"]) == run_dir / "tiny-qwen2.5-vl"
    server_log = (run_dir / "reward_server.log").read_text(errors="replace")
    assert "Initializing a V1 LLM engine" in server_log, "vLLM served it (the main venv has none)"
    [(_, output_tokens, finish_reason)] = engine_calls(server_log)
    # Probability mode (the backend's default): one generated position, whose logprobs are read.
    assert (output_tokens, finish_reason) == (1, "length")

    [record] = [
        json.loads(line) for line in (run_dir / "vlm_episodes_train_rank0.jsonl").read_text().splitlines()
    ]
    assert (record["task_id"], record["episode_length"], record["native_success"]) == (
        RUN_TASK,
        RUN_MAX_STEPS,
        False,
    )
    # Pinned: the tiny model judges the still episode, answers "no", P(yes) just below 0.5.
    assert (record["fallback"], record["error_kind"], record["vlm_answer"]) == (False, None, "no")
    assert record["vlm_score"] == pytest.approx(SCORE, abs=2e-3)
    assert "random" in (run_dir / "report.md").read_text().lower(), "the report warns the judge is random"
