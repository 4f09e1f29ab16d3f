"""The learning comparison's loop, end to end on a slice: scores reach GRPO, the policy follows them.

One ``compare_rewards.sh`` run (RLinf's real loop: Ray, the env worker with this fork's LiberoEnv on
real LIBERO without cameras, the rollout worker, the FSDP actor) of 2 GRPO steps, 2 envs (one group)
and 16-step episodes, judged by a stand-in on the wire (``tests/support/learning_judge.py``: seeded
scores, a graded reward). It checks the loop, not the learning (docs/training/learning.md has the
runs that learn): each score the judge gave reaches the episode's return and GRPO's advantage, the
release Gaussians move the way those advantages say, the rollout's and the actor's log-probabilities
agree, and ``learning.json`` and ``compare.png`` are written; nothing is left running.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest
import torch

from tests.support.learning_judge import SCORES_FILE

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "examples" / "embodiment" / "scripts" / "compare_rewards.sh"
SLICE = (
    "env.train.total_num_envs=2",
    "algorithm.group_size=2",
    "env.train.max_steps_per_rollout_epoch=16",
    "env.train.max_episode_steps=16",
    "actor.global_batch_size=4",
    "actor.micro_batch_size=4",
    "algorithm.update_epoch=1",
    "algorithm.filter_rewards=False",  # a group of 2 graded scores may average below the mission's 0.5
    "env.train.simulation.envs_per_process=2",
)
REWARD_COEF = 5.0  # libero_10's reward_coef: a graded score s earns 5 s

pytestmark = [pytest.mark.libero, pytest.mark.slow]


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("compare")
    command = ["bash", str(SCRIPT), "--out", str(out), "--runs", "wire", "--steps", "2"]
    command += ["--plugin", "tests.support.learning_judge", *(f"--override={o}" for o in SLICE)]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    finished = json.loads((out / "wire" / "finished.json").read_text())
    record_dir = Path(finished["log_dir"]) / "cpu_learn"
    steps = [json.loads((record_dir / f"learning_step{k}_rank0.json").read_text()) for k in (1, 2)]
    scores = [json.loads(line)["score"] for line in (out / "judges" / SCORES_FILE).read_text().splitlines()]
    return {
        "out": out,
        "stdout": result.stdout,
        "steps": steps,
        "scores": scores,
        "log_dir": Path(finished["log_dir"]),
    }


def test_a_line_per_grpo_step_then_the_summary(comparison: dict[str, Any]) -> None:
    lines = [line for line in comparison["stdout"].splitlines() if line.startswith("[compare]")]
    assert any(line.startswith("[compare] wire step 1/2 (") for line in lines)
    assert any(line.startswith("[compare] wire step 2/2 (") for line in lines)
    assert any("judge wire serving at http://127.0.0.1:" in line for line in lines)
    assert lines[-1] == f"[compare] per step: {comparison['out'] / 'learning.json'}"


def test_each_score_is_the_return_of_its_episode_and_its_advantage_grpos(comparison: dict[str, Any]) -> None:
    scores = comparison["scores"]
    assert len(scores) == 4, "2 envs x 2 steps, one call per episode"
    for k, step in enumerate(comparison["steps"]):
        returns = np.array(step["returns"])
        np.testing.assert_allclose(
            sorted(returns), sorted(REWARD_COEF * np.array(scores[2 * k : 2 * k + 2])), atol=1e-4
        )
        centred = returns - returns.mean()
        expected = centred / (returns.std(ddof=1) + 1e-6)  # GRPO: the group's mean and std
        np.testing.assert_allclose(step["advantages"], expected, atol=1e-4)
    judged = [
        json.loads(line)
        for path in comparison["log_dir"].glob("vlm_episodes_train_rank*.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert sorted(round(j["vlm_score"], 6) for j in judged if not j.get("canary")) == sorted(scores)


def test_the_release_means_move_the_way_the_advantages_say(comparison: dict[str, Any]) -> None:
    first, second = comparison["steps"]
    assert first["drawn"] == second["drawn"] == [1.0, 1.0], "each episode drew at its first chunk"
    assert second["parameters_before"] == first["parameters_after"], "the rollout plays the update"
    before = np.array(first["parameters_before"]["mean"]).reshape(-1)
    moved = np.array(first["parameters_after"]["mean"]).reshape(-1) - before
    # The policy gradient of sum_i A_i log N(draw_i; mean, std) w.r.t. the mean has the sign of
    # sum_i A_i (draw_i - mean); one AdamW step moves each coordinate the same distance that way.
    pull = (np.array(first["advantages"])[:, None] * (np.array(first["release"]) - before)).sum(axis=0)
    pulled = np.abs(pull) > 1e-6
    assert pulled.any(), "the advantages pull somewhere"
    assert np.all(np.sign(moved[pulled]) == np.sign(pull[pulled]))
    # RLinf's optimizer has taken one empty step when it is built (warmup_optimizer_state), so the
    # first real update is Adam's second: lr * (1 - b1) / (1 - b1**2) / sqrt((1 - b2) / (1 - b2**2)).
    lr, b1, b2 = 0.003, 0.9, 0.999
    step = lr * (1 - b1) / (1 - b1**2) / np.sqrt((1 - b2) / (1 - b2**2))
    np.testing.assert_allclose(np.abs(moved[pulled]), step, rtol=1e-3)


def test_the_actor_trains_on_the_rollouts_own_logprobs(comparison: dict[str, Any]) -> None:
    records = torch.load(comparison["log_dir"] / "cpu_learn" / "onpolicy_logprobs_rank0.pt")
    torch.testing.assert_close(records["actor"], records["rollout"], rtol=0, atol=1e-6)
    assert records["rollout"].abs().sum() > 0, "the draws' log-densities, not only the expert's zeros"


def test_learning_json_and_the_picture_are_written(comparison: dict[str, Any]) -> None:
    out = comparison["out"]
    learning = json.loads((out / "learning.json").read_text())
    run = learning["runs"]["wire"]
    assert (
        run["reward_model"]["backend"] == "scripted_scores" and run["reward_model"]["binary_reward"] is False
    )
    assert [s["step"] for s in run["steps"]] == [1, 2]
    for step in run["steps"]:
        assert step["episodes"] == 2
        assert step["success_rate"] == 0.0, "16 steps never finish a task"
        assert 0.0 <= step["judged_success_rate"] <= 1.0 and step["recall"] is None
        assert step["false_positive_rate"] == step["judged_success_rate"], "every episode a native failure"
        assert step["groups_with_gradient"] in (0.0, 1.0)
        assert len(step["parameters"]["mean"]) == 2 and len(step["parameters"]["std"]) == 2
    assert set(run["time_s"]) == {"start_up", "resets", "rollout", "judging", "actor_update", "wall"}
    assert (out / "compare.png").stat().st_size > 10_000 and "| wire |" in (out / "compare.md").read_text()


def test_nothing_is_left_running(comparison: dict[str, Any]) -> None:
    mine = [
        p.info["pid"]
        for p in psutil.process_iter(["pid", "cmdline"])
        if any(str(comparison["out"]) in part for part in (p.info["cmdline"] or []))
    ]
    assert not mine, f"processes of the comparison still running: {mine}"
