"""The learning comparison's loop, end to end on a slice: scores reach GRPO, the policy follows them.

One ``compare_rewards.sh`` run (RLinf's real loop: Ray, the env worker with this fork's LiberoEnv on
real LIBERO without cameras, the rollout worker, the FSDP actor) of 2 GRPO steps, 4 envs (two groups
of 2, one from an initial state of task 0 and one of task 1 at every step) and 16-step episodes, with the
mission's reward filter, judged by a stand-in on the wire (``tests/support/learning_judge.py``:
scripted scores per task, a graded reward; a group of task 0 gets a spread but a mean return the
filter drops). It checks the loop, not the learning (docs/training/learning.md has the runs that
learn): each score the judge gave reaches its own episode's return and GRPO's advantage, the filter
drops the groups it should and only those, the release Gaussians move the way the advantages say,
the rollout's and the actor's log-probabilities agree, each episode's outcome is recorded, and
``learning.json`` and ``compare.png`` are written; nothing is left running. Episodes that end at the
simulator's success (unequal lengths) are the unit test's (``test_cpu_learn_weights.py``): 16 steps
never finish a task.
"""

from __future__ import annotations

import json
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest
import torch

from tests.support.learning_judge import PER_TASK, SCORES_FILE

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "examples" / "embodiment" / "scripts" / "compare_rewards.sh"
ENVS, GROUP, STEPS = 4, 2, 2
SLICE = (
    f"env.train.total_num_envs={ENVS}",
    f"algorithm.group_size={GROUP}",
    "env.train.max_steps_per_rollout_epoch=16",
    "env.train.max_episode_steps=16",
    "actor.global_batch_size=8",  # 2 chunk steps x 4 envs
    "actor.micro_batch_size=8",
    "algorithm.update_epoch=1",
    f"env.train.simulation.envs_per_process={ENVS}",
    "env.train.simulation.initial_states=[[0,0],[1,0]]",  # a group's task decides its scores
    # each step's groups take the two states in a shuffled order: one group per task, every step (two
    # groups of one task would share its scores in the order the calls arrive, a race)
    "env.train.use_ordered_reset_state_ids=True",
)
REWARD_COEF = 5.0  # libero_10's reward_coef: a graded score s earns 5 s
FILTER_BOUNDS = (0.5, 4.5)  # the mission's algorithm.rewards_lower_bound / rewards_upper_bound

pytestmark = [pytest.mark.libero, pytest.mark.slow]


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("compare")
    command = ["bash", str(SCRIPT), "--out", str(out), "--runs", "wire", "--steps", str(STEPS)]
    command += ["--plugin", "tests.support.learning_judge", *(f"--override={o}" for o in SLICE)]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    finished = json.loads((out / "wire" / "finished.json").read_text())
    log_dir = Path(finished["log_dir"])
    record_dir = log_dir / "cpu_learn"
    steps = [json.loads((record_dir / f"learning_step{k}_rank0.json").read_text()) for k in (1, 2)]
    outcomes = [json.loads((record_dir / f"outcomes_step{k}_rank0.json").read_text()) for k in (1, 2)]
    scores = [json.loads(line) for line in (out / "judges" / SCORES_FILE).read_text().splitlines()]
    by_env = defaultdict(list)  # each env's judged episodes, in order: step k is its k-th
    for path in sorted(log_dir.glob("vlm_episodes_train_rank*.jsonl")):
        for line in path.read_text().splitlines():
            episode = json.loads(line)
            if not episode.get("canary"):
                by_env[episode["env"]].append(episode)
    return {
        "out": out,
        "stdout": result.stdout,
        "steps": steps,
        "outcomes": outcomes,
        "scores": scores,
        "episodes": [[by_env[env][k] for env in range(ENVS)] for k in range(STEPS)],
        "log_dir": log_dir,
    }


def expected_advantages(returns: np.ndarray) -> tuple[np.ndarray, list[bool]]:
    """GRPO's advantages of each group of ``GROUP``, zero where the reward filter drops the group."""
    advantages, kept = [], []
    for group in returns.reshape(-1, GROUP):
        keep = FILTER_BOUNDS[0] <= group.mean() <= FILTER_BOUNDS[1]
        centred = (group - group.mean()) / (group.std(ddof=1) + 1e-6)  # GRPO: the group's mean and std
        advantages.append(centred if keep else np.zeros_like(group))
        kept.append(bool(keep))
    return np.concatenate(advantages), kept


def test_a_line_per_grpo_step_then_the_summary(comparison: dict[str, Any]) -> None:
    lines = [line for line in comparison["stdout"].splitlines() if line.startswith("[compare]")]
    assert any(line.startswith("[compare] wire step 1/2 (") for line in lines)
    assert any(line.startswith("[compare] wire step 2/2 (") for line in lines)
    assert any("judge wire serving at http://127.0.0.1:" in line for line in lines)
    assert lines[-1] == f"[compare] per step: {comparison['out'] / 'learning.json'}"


def test_each_score_is_the_return_of_its_episode_and_its_advantage_grpos(comparison: dict[str, Any]) -> None:
    scores = comparison["scores"]
    assert len(scores) == ENVS * STEPS, "one call per episode"
    given = sorted(round(s["score"], 6) for s in scores)
    judged = sorted(round(e["vlm_score"], 6) for step in comparison["episodes"] for e in step)
    assert judged == given, "the env's episode log holds the scores the judge gave"
    for k, step in enumerate(comparison["steps"]):
        episodes = comparison["episodes"][k]
        for env, episode in enumerate(episodes):  # a task's scores are its own
            assert episode["vlm_score"] in PER_TASK[episode["task_text"]], (k, env)
        own = REWARD_COEF * np.array([e["vlm_score"] for e in episodes])
        np.testing.assert_allclose(step["returns"], own, atol=1e-4)  # trajectory j is env j's episode
        advantages, _ = expected_advantages(np.array(step["returns"]))
        np.testing.assert_allclose(step["advantages"], advantages, atol=1e-4)


def test_the_reward_filter_drops_the_groups_out_of_its_bounds_and_only_those(
    comparison: dict[str, Any],
) -> None:
    dropped_with_spread = 0
    for step in comparison["steps"]:
        returns = np.array(step["returns"]).reshape(-1, GROUP)
        _, kept = expected_advantages(returns.reshape(-1))
        spread = [bool(np.ptp(group) > 0) for group in returns]
        trained = [keep and has for keep, has in zip(kept, spread, strict=True)]
        assert step["groups_with_gradient"] == pytest.approx(sum(trained) / len(trained))
        dropped_with_spread += sum(has and not keep for keep, has in zip(kept, spread, strict=True))
    # The check above could not tell a filter from none unless some group with a spread was dropped:
    # each step's group of task 0 (0.02 and 0.14: a mean return of 0.4).
    assert dropped_with_spread == STEPS


def test_each_episodes_outcome_is_recorded_in_env_order(comparison: dict[str, Any]) -> None:
    for k, record in enumerate(comparison["outcomes"]):
        assert (record["step"], record["rank"]) == (k + 1, 0)
        assert record["success_once"] == [0.0] * ENVS, "16 steps never finish a task"
        assert record["episode_len"] == [16.0] * ENVS
        assert record["vlm_fallback"] == [0.0] * ENVS
        scores = [e["vlm_score"] for e in comparison["episodes"][k]]
        np.testing.assert_allclose(record["vlm_score"], scores, atol=1e-6)


def test_the_release_means_move_the_way_the_advantages_say(comparison: dict[str, Any]) -> None:
    first, second = comparison["steps"]
    assert first["drawn"] == second["drawn"] == [1.0] * ENVS, "each episode drew at its first chunk"
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
    for step, record in zip(run["steps"], comparison["steps"], strict=True):
        assert step["episodes"] == ENVS
        assert step["success_rate"] == 0.0, "16 steps never finish a task"
        assert 0.0 <= step["judged_success_rate"] <= 1.0 and step["recall"] is None
        assert step["false_positive_rate"] == step["judged_success_rate"], "every episode a native failure"
        assert step["groups_with_gradient"] == record["groups_with_gradient"] and step["fallbacks"] == 0
        assert len(step["parameters"]["mean"]) == 2 and len(step["parameters"]["std"]) == 2
    assert [[len(group) for group in step] for step in run["outcomes"]] == [[GROUP] * (ENVS // GROUP)] * STEPS
    stats = run["statistics"]
    assert stats["fallbacks"] == 0 and stats["episode_length"] == {"min": 16, "max": 16}
    assert stats["rise"] is None, "2 steps: no first-2-against-last-3"
    assert stats["recall"] is None and stats["false_positive_rate"]["estimate"] == pytest.approx(
        np.mean([s["judged_success_rate"] for s in run["steps"]])
    ), "pooled over the same episodes, every one a native failure"
    assert learning["primary_endpoint"] == {}, "no native run to pair with"
    assert set(run["time_s"]) == {"start_up", "resets", "rollout", "judging", "actor_update", "wall"}
    markdown = (out / "compare.md").read_text()
    assert (out / "compare.png").stat().st_size > 10_000 and "| wire |" in markdown
    assert "## Statistics (seed 0;" in markdown and markdown.count("| wire |") == 2


def test_nothing_is_left_running(comparison: dict[str, Any]) -> None:
    mine = [
        p.info["pid"]
        for p in psutil.process_iter(["pid", "cmdline"])
        if any(str(comparison["out"]) in part for part in (p.info["cmdline"] or []))
    ]
    assert not mine, f"processes of the comparison still running: {mine}"
