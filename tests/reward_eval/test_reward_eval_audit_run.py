"""The audit of the session's shared LIBERO run (conftest.py): no new rollout.

The shared run (zero policy, two native failures, the tiny Qwen2.5-VL on a local server) is
audited by ``run`` itself, which finds no native success and says so in its report. A copy of
its episode log with the first episode marked a native success (its kept video unchanged) is
then audited by ``audit`` on the tiny checkpoint through a real server process: every
counterfactual of that episode and the other episode are judged, wrong_task under the other
LIVING_ROOM_SCENE2 basket task's instruction, read from the LIBERO suite the run's settings name.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reward_eval.analysis.perturbations import perturbation_names
from tests.reward_eval.conftest import EvalRun, run_reward_eval

pytestmark = [pytest.mark.libero, pytest.mark.slow]

TASK_1 = "put both the cream cheese box and the butter in the basket"  # libero_10 task 1, same scene


def test_the_shared_run_says_why_it_has_no_audit(reward_eval_run: EvalRun) -> None:
    run = reward_eval_run
    assert run.returncode == 0, run.stderr[-3000:]
    skipped = json.loads((run.run_dir / "summary.json").read_text())["audit"]["skipped"]
    assert skipped.startswith("none of the 2 kept episodes of") and "is a native success" in skipped
    assert f"[reward-eval] audit: none ({skipped})" in run.stdout
    report = (run.run_dir / "report.md").read_text()
    assert "## Judge audit: counterfactual episodes" in report and f"No audit: {skipped}" in report


def test_the_tiny_checkpoint_judges_every_counterfactual_through_a_real_server(
    reward_eval_run: EvalRun, tiny_qwen_checkpoint: str, tmp_path: Path
) -> None:
    copy = tmp_path / "one-success"
    copy.mkdir()
    shutil.copy(reward_eval_run.run_dir / "settings.json", copy / "settings.json")
    [log] = reward_eval_run.run_dir.glob("vlm_episodes_*.jsonl")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    records[0]["native_success"] = True
    (copy / log.name).write_text("".join(json.dumps(r) + "\n" for r in records))

    result = run_reward_eval(
        "audit", str(copy), "--backend", "qwen_vl_hf", "--model", tiny_qwen_checkpoint, timeout=300
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    audit = json.loads((copy / "audit" / "audit.json").read_text())
    rows = ["original", *perturbation_names(), "failure"]
    assert [c["perturbation"] for c in audit["cases"]] == rows
    assert (audit["calls"], audit["fallback_calls"]) == (7, 0)
    assert all(0.0 <= c["score"] <= 1.0 for c in audit["cases"])
    [wrong] = [c for c in audit["cases"] if c["perturbation"] == "wrong_task"]
    assert wrong["judged_task_text"] == TASK_1 and wrong["task_text"] != TASK_1
    assert "audit: 7 calls for 2 episodes" in result.stderr
    assert "POST /score" in (copy / "audit" / "reward_server.log").read_text()
    assert "Traceback" not in result.stderr
