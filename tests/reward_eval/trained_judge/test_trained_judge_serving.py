"""The shipped trained VLM judge as the main job serves it: ``rescore`` of real LIBERO episodes (the
session's expert run: two successes and a near miss, kept at 128 px) on a local ``qwen_vl_hf``
server with the recipe's env YAML, then the audit, as ``scripts/run.sh`` does (~30 s).

What holds on any CPU is a property with a margin: the judge's weights are shipped, the kernels
differ, so each score is bounded away from the threshold rather than pinned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reward_eval.trained_judge import recipe
from tests.reward_eval.conftest import EvalRun, run_reward_eval

pytestmark = [pytest.mark.libero, pytest.mark.slow]

MARGIN = 0.2  # how far from the 0.5 threshold each verdict lies
# The expert run was made with every judge-facing key off its default (score_mode rubric, threshold
# 0.6); the main job reads the trained judge as the recipe's YAML does: P(yes), a verdict at 0.5.
MAIN_JOB_READING = ("--score-mode", "probability", "--threshold", "0.5")


@pytest.fixture(scope="module")
def rescored(expert_run: EvalRun, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trained-judge")
    config = recipe.env_config(root / "judge_env.yaml")
    out = root / "trained_vlm"
    model = str(recipe.CHECKPOINT)
    result = run_reward_eval(
        "rescore", str(expert_run.run_dir), "--backend", "qwen_vl_hf", "--model", model,
        "--env-config", str(config), "--out", str(out), *MAIN_JOB_READING,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    result = run_reward_eval(
        "audit", str(out), "--backend", "qwen_vl_hf", "--model", model, "--env-config", str(config)
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def test_the_main_jobs_row_judges_every_episode_and_calls_the_successes_successes(rescored: Path) -> None:
    """Every episode is judged (no fallback) and both successes are successes with a margin (0.9966
    and 0.9965 here, at the run's 20 frames). The near miss is not asserted: this judge calls it a
    success too (0.996 here, at 16 frames as well), the one false positive it is known for; benchmark
    21's near misses beside the basket are all failures. The judge shipped before its own set
    called all three failures."""
    lines = (rescored / "vlm_episodes_train_rank0.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["fallback"] for r in records] == [False] * 3
    successes = [r for r in records if r["native_success"]]
    assert len(successes) == 2 and all(r["vlm_score"] > 0.5 + MARGIN for r in successes), successes
    summary = json.loads((rescored / "summary.json").read_text())
    judges = [entry["judge"] for entry in summary["judges"]]
    assert len(judges) == 1 and judges[0].startswith(f"qwen_vl_hf on {recipe.CHECKPOINT.name},"), judges


def test_its_audit_judges_every_counterfactual(rescored: Path) -> None:
    """Every audit call answered. The rates are not pinned: the expert run keeps 20 frames, which
    ``rescore`` and the audit send, where the judge was trained on 16 (its frozen successes were
    judged successes at 20 frames here, 0% at 16 on the test split: benchmark 21)."""
    audit = json.loads((rescored / "audit" / "audit.json").read_text())
    assert audit["calls"] > 0 and audit["fallback_calls"] == 0
