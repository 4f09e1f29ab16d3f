"""The evaluation job (``reward_eval run``): option checks, the episode plan, and real runs.

The rollout loop (:mod:`reward_eval.job.rollout`) runs first on a scripted stand-in
env, which says exactly what reached the policy and the env and what the progress bar
counted. The real runs use LIBERO and real reward servers on 127.0.0.1: the session's
shared run (zero policy, local ``qwen_vl_hf`` server on the tiny checkpoint, see
conftest.py) and one short run each of the random and the expert policy against a
``fixed_score`` server given by ``--endpoint``. The expert's full episodes run in
``test_reward_eval_expert_libero.py``.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import requests
from PIL import Image

from reward_eval import cli
from reward_eval.commands import run as run_cmd
from reward_eval.job import options, rollout
from reward_eval.job.run_dir import run_command
from reward_eval.judge.endpoint import EndpointUnavailableError, served_backend
from reward_eval.policies import make_policy
from reward_eval.report.plots import read_video_frames
from tests.reward_eval.conftest import (
    EXPORTED_KEY,
    RUN_EPISODES,
    RUN_MAX_STEPS,
    RUN_TASK,
    EvalRun,
    run_reward_eval,
)
from tests.support.server import ServerProcess
from vlm_reward.judging.prompts import PRESETS
from vlm_reward.tools.server_process import ServerStartError, free_port
from vlm_reward.verdict import JUDGE_KEYS, JudgeIdentity

# ---------------------------------------------------------------------------- the rollout loop


class ScriptedEnv:
    """Stands in for ``LiberoEnv`` in the rollout loop: every episode ends after ``chunks``
    chunk steps with the outcome ``outcomes`` gives for its reset state id, and the env
    records what it was given (reset state ids, actions)."""

    def __init__(self, num_envs: int, outcomes: dict[int, tuple[bool, bool, bool]], chunks: int = 2) -> None:
        self.num_envs, self.outcomes, self.chunks = num_envs, outcomes, chunks
        self.resets: list[list[int]] = []
        self.actions: list[np.ndarray] = []
        self.current_raw_obs = [{"env": i} for i in range(num_envs)]
        self._ids = [-1] * num_envs
        self._steps = 0

    def _obs(self) -> dict:
        return {"step": self._steps}

    def reset(self, env_idx: np.ndarray, reset_state_ids: np.ndarray) -> tuple[dict, dict]:
        for i, rid in zip(env_idx.tolist(), reset_state_ids.tolist(), strict=True):
            self._ids[i] = rid
        self.resets.append(reset_state_ids.tolist())
        self._steps = 0
        return self._obs(), {}

    def chunk_step(self, actions: np.ndarray) -> tuple:
        import torch

        self.actions.append(actions)
        self._steps += 1
        chunk = actions.shape[1]
        ended = torch.zeros(self.num_envs, chunk, dtype=torch.bool)
        ended[:, -1] = self._steps >= self.chunks
        # native_success, vlm_success, vlm_fallback of each env's current episode (0 until it ends)
        rows = [self.outcomes.get(rid, (False, False, False)) for rid in self._ids]
        done = self._steps >= self.chunks
        episode = {
            key: np.array([float(done and row[k]) for row in rows])
            for k, key in enumerate(("native_success", "vlm_success", "vlm_fallback"))
        }
        infos = [{"episode": episode}] * chunk
        return [self._obs()] * chunk, None, ended, torch.zeros_like(ended), infos


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> dict:
    """A copy of the policy registry for tests that register policies, restored afterwards."""
    from reward_eval.policies import registry as policy_registry

    copy = dict(policy_registry._REGISTRY)
    monkeypatch.setattr(policy_registry, "_REGISTRY", copy)
    return copy


def test_the_loop_hands_the_env_and_each_observation_to_a_registered_policy(registry: dict) -> None:
    from reward_eval.policies import Policy, register_policy

    calls: list[tuple] = []

    @register_policy("records_calls")
    class RecordsCalls(Policy):
        def __init__(self, seed: int = 0, gain: float = 1.0) -> None:
            super().__init__(seed)
            self.gain = gain

        def reset(self, env: object, obs: dict) -> None:
            calls.append(("reset", env, obs["step"]))

        def act(self, env: object, obs: dict, chunk: int) -> np.ndarray:
            calls.append(("act", env, obs["step"]))
            return np.full((env.num_envs, chunk, 7), self.gain, dtype=np.float32)

    env = ScriptedEnv(num_envs=2, outcomes={}, chunks=2)
    policy = make_policy("records_calls", seed=3, gain=0.25)  # by name, as the job builds it
    rollout.rollout(env, policy, [7, 8, 9], chunk=4)
    assert env.resets == [[7, 8], [9]], "batches of num_envs, the last one partial"
    # Per batch: one reset, then one act per chunk step, each with the obs the env last returned.
    assert calls == [("reset", env, 0), ("act", env, 0), ("act", env, 1)] * 2
    assert len(env.actions) == 4 and all((a == 0.25).all() and a.shape == (2, 4, 7) for a in env.actions)


def test_progress_bar_counts_fallbacks_apart_from_vlm_successes(capsys: pytest.CaptureFixture[str]) -> None:
    outcomes = {  # reset id: (native_success, vlm_success, vlm_fallback)
        0: (True, True, False),  # judged, agrees
        1: (False, True, True),  # fallback: vlm_success is the fallback score, not a verdict
        2: (True, True, True),  # fallback (native success as the fallback score)
        3: (False, False, False),  # judged, agrees
        4: (False, True, False),  # judged, a false positive
    }
    env = ScriptedEnv(num_envs=2, outcomes=outcomes)
    tally = rollout.rollout(env, make_policy("zero"), [0, 1, 2, 3, 4], chunk=2)
    assert tally == rollout.Tally(done=5, native=2, judged=3, vlm=2, fallback=2)
    assert "native=2/5, vlm=2/3, fallback=2" in capsys.readouterr().err


def test_tally_rejects_metrics_of_different_lengths() -> None:
    with pytest.raises(ValueError, match=r"episode metrics differ in shape: native_success \(2,\)"):
        rollout.Tally().add(
            {"native_success": np.zeros(2), "vlm_success": np.zeros(2), "vlm_fallback": np.zeros(1)}
        )


# ---------------------------------------------------------------------------- episode plan


@pytest.mark.parametrize(
    ("tasks", "per_task", "trials", "expected"),
    [
        ([0], 2, [50, 50], [0, 1]),
        ([1, 0], 1, [50, 50], [50, 0]),  # tasks order kept
        ([2], 3, [3, 4, 5], [7, 8, 9]),  # uneven trial counts: offset is the sum before the task
    ],
    ids=["first-task", "order-kept", "uneven-trials"],
)
def test_plan_maps_task_and_trial_to_rlinf_reset_state_ids(
    tasks: list[int], per_task: int, trials: list[int], expected: list[int]
) -> None:
    assert run_cmd.plan_reset_state_ids(tasks, per_task, trials) == expected


@pytest.mark.parametrize(
    ("tasks", "per_task", "message"),
    [([2], 1, "task id 2 is out of range; valid ids: 0..1"), ([1], 51, "fewer than --episodes-per-task 51")],
    ids=["task-out-of-range", "too-many-episodes"],
)
def test_plan_rejects_impossible_requests(tasks: list[int], per_task: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        run_cmd.plan_reset_state_ids(tasks, per_task, [50, 50])


# ---------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--endpoint", "http://127.0.0.1:1/score", "--model", "/m"], "--model only configure a local"),
        (["--endpoint", "ftp://x/score"], "--endpoint must be an http\\(s\\) URL"),
        (["--backend", "fixed_score"], "--backend fixed_score needs --model"),
        (["--policy", "oracle"], "unknown policy 'oracle'; valid policies: expert, random, zero"),
        (["--policy", "expert", "--policy-kwargs", '{"drop": "fly"}'], "expert drop 'fly' is not a phase"),
        (["--policy", "random", "--policy-kwargs", '{"scale": 3}'], "scale must be in \\(0, 1\\]"),
        (["--tasks", "0,0"], "task ids repeat"),
        (["--tasks", "a"], "expected comma-separated integers"),
        (["--num-envs", "0"], "must be at least 1"),
        (["--threshold", "1.5"], "must be in \\[0, 1\\]"),
        (["--binary", "--continuous"], "not allowed with argument"),
    ],
    ids=[
        "endpoint-and-model",
        "endpoint-not-http",
        "plugin-backend-without-model",
        "unknown-policy",
        "bad-expert-kwargs",
        "bad-policy-kwargs",
        "repeated-task",
        "non-integer-task",
        "zero-envs",
        "threshold-out-of-range",
        "binary-and-continuous",
    ],
)
def test_bad_options_are_argparse_errors(argv: list[str], message: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        run_cmd.parse_args(argv)
    assert exc.value.code == 2
    assert re.search(message, capsys.readouterr().err)


@pytest.mark.slow
def test_out_of_range_task_is_rejected_before_any_rollout(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit):
        run_cmd.parse_args(["--tasks", "10", "--out", str(tmp_path / "run")])
    assert "task id 10 is out of range; valid ids: 0..9" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [([], 2, "a command is required"), (["train"], 2, "unknown command 'train'"), (["--help"], 0, "")],
    ids=["no-command", "unknown-command", "help"],
)
def test_the_entry_point_lists_the_commands(argv: list[str], status: int, message: str, capsys) -> None:
    assert cli.main(argv) == status
    out, err = capsys.readouterr()
    assert "{run,rescore,report,audit,compare,finetune,train-classifier}" in out + err
    listed = "valid commands: run, rescore, report, audit, compare, finetune, train-classifier." in err
    assert (message in err) and (listed is (status == 2))


def test_a_run_dir_with_an_episode_log_is_not_reused(tmp_path: Path, capsys) -> None:
    (tmp_path / "vlm_episodes_train_rank0.jsonl").write_text("{}\n")
    with pytest.raises(SystemExit):
        run_cmd.parse_args(["--out", str(tmp_path)])
    assert "already holds an episode log" in capsys.readouterr().err


def _scoring_args(argv: list[str]):
    parser = run_cmd.build_parser()
    args = parser.parse_args(argv)
    options.check_scoring_options(parser, args)
    return args


def test_an_unreachable_endpoint_ends_the_job_with_status_1_and_one_line(tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}/score"  # nothing listens there
    result = run_reward_eval("run", "--endpoint", endpoint, "--out", str(tmp_path / "out"))
    assert result.returncode == 1, result.stderr[-2000:]
    health = endpoint.replace("/score", "/health")
    assert f"[reward-eval] error: the reward server is not reachable at {health}" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("failure", "status"),
    [
        (None, 0),
        (EndpointUnavailableError("no server"), 1),
        (ServerStartError("no server"), 1),
        (ValueError("a bug"), None),
    ],
    ids=["ok", "endpoint-unavailable-is-status-1", "server-start-is-status-1", "bugs-propagate"],
)
def test_run_command_maps_server_errors_to_status_1(
    failure: Exception | None, status: int | None, capsys
) -> None:
    def execute(args: object) -> None:
        if failure is not None:
            raise failure

    if status is None:
        with pytest.raises(ValueError, match="a bug"):
            run_command(execute, argparse.Namespace())
        return
    assert run_command(execute, argparse.Namespace()) == status
    assert ("[reward-eval] error: no server" in capsys.readouterr().err) is (status == 1)


@pytest.mark.slow
def test_without_a_model_the_tiny_random_checkpoint_is_built_into_the_run_dir(tmp_path: Path) -> None:
    args = _scoring_args([])
    assert args.backend is None and served_backend(args) == "qwen_vl_hf"
    model, random_model = options.resolve_model(args, tmp_path)
    assert random_model is True and Path(model) == tmp_path / "tiny-qwen2.5-vl"
    assert (Path(model) / "config.json").is_file() and (Path(model) / "model.safetensors").is_file()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--model", "/models/qwen"], ("/models/qwen", False)),
        (["--endpoint", "http://gpu:18080/score"], (None, False)),
    ],
    ids=["given-model", "endpoint"],
)
def test_a_given_model_or_endpoint_is_not_the_random_one(
    argv: list[str], expected: tuple, tmp_path: Path
) -> None:
    assert options.resolve_model(_scoring_args(argv), tmp_path) == expected
    assert list(tmp_path.iterdir()) == [], "nothing built"


@pytest.mark.parametrize(
    ("shape", "ok"),
    [((2, 4, 7), True), ((2, 4, 6), False), ((1, 4, 7), False), ((2, 3, 7), False)],
    ids=["right", "action-dim", "num-envs", "chunk"],
)
def test_policy_actions_are_shape_checked(shape: tuple[int, ...], ok: bool) -> None:
    policy = make_policy("zero")
    if ok:
        assert rollout.checked_actions(policy, np.zeros(shape), 2, 4).dtype == np.float32
    else:
        expected = r"policy 'zero' returned actions of shape .* expected \(2, 4, 7\)"
        with pytest.raises(ValueError, match=expected):
            rollout.checked_actions(policy, np.zeros(shape), 2, 4)


# ---------------------------------------------------------------------------- the shared real run

SHARED_RUN_SCORES = [0.4633, 0.4636]  # of the seeded tiny model on task 0, trials 0 and 1


def _records(run_dir: Path) -> list[dict]:
    [log] = run_dir.glob("vlm_episodes_*.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()]


def _assert_png_with_content(path: Path) -> None:
    with Image.open(path) as image:
        image.verify()  # a complete, valid PNG
    with Image.open(path) as image:
        assert image.format == "PNG" and min(image.size) > 50
        pixels = np.asarray(image.convert("L"), dtype=float)
    assert pixels.std() > 5, f"{path.name} is blank"


@pytest.mark.libero
@pytest.mark.slow
def test_job_scores_every_episode_and_writes_the_report(
    reward_eval_run: EvalRun, tiny_qwen_checkpoint: str
) -> None:
    run = reward_eval_run
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    records = _records(run.run_dir)
    assert len(records) == RUN_EPISODES
    assert [(r["task_id"], r["trial_id"], r["reset_state_id"]) for r in records] == [
        (RUN_TASK, k, k)
        for k in range(RUN_EPISODES)  # task 0's trials are reset state ids 0..N-1
    ]
    assert all(r["episode_length"] == RUN_MAX_STEPS and r["native_success"] is False for r in records)
    assert all(r["used_for_training"] is False for r in records), "the job runs in shadow mode"
    for r in records:  # every video is kept inside the run dir (the server's --video-root)
        assert Path(r["video_path"]).parent == run.run_dir / "videos" and Path(r["video_path"]).is_file()
    # Pinned: the seeded tiny model, read as P(yes) (probability mode), judges both still
    # episodes and answers "no" just below the threshold.
    assert [(r["fallback"], r["error_kind"], r["vlm_answer"], r["vlm_success"]) for r in records] == [
        (False, None, "no", False)
    ] * RUN_EPISODES
    assert [r["vlm_score"] for r in records] == pytest.approx(SHARED_RUN_SCORES, abs=2e-3)
    # Every line names its judge, as the server answered.
    judge = JudgeIdentity("qwen_vl_hf", Path(tiny_qwen_checkpoint).name, "probability", "yes_no")
    judge = replace(judge, prompt_hash=PRESETS["yes_no"].fingerprint)
    assert [{k: r[k] for k in JUDGE_KEYS} for r in records] == [judge.to_record()] * RUN_EPISODES
    assert f"[reward-eval] judged by: {judge}" in run.stdout

    summary = json.loads((run.run_dir / "summary.json").read_text())
    assert summary["overall"]["n_episodes"] == RUN_EPISODES
    assert summary["overall"]["fallback_count"] == 0 and summary["overall"]["agreement"] == 1.0
    title = f"Video VLM vs native success: libero_10 tasks {RUN_TASK}, zero policy"  # qwen_vl_hf's kind
    for name in ("report.md", "report.html"):
        assert title in (run.run_dir / name).read_text()
    pngs = sorted(run.run_dir.rglob("*.png"))
    assert pngs, "the report draws figures"
    for png in pngs:
        _assert_png_with_content(png)

    settings = json.loads((run.run_dir / "settings.json").read_text())
    assert settings["backend"] == "qwen_vl_hf" and settings["model"] == tiny_qwen_checkpoint
    assert settings["random_model"] is False and settings["policy"] == "zero"
    assert settings["env_config"].endswith("examples/embodiment/config/env/libero_10.yaml")
    assert settings["tasks"] == [RUN_TASK] and settings["max_episode_steps"] == RUN_MAX_STEPS
    assert settings["reset_state_ids"] == [r["reset_state_id"] for r in records]
    assert "overall" in run.stdout and f"report: {run.run_dir / 'report.html'}" in run.stdout
    assert "native=0/2, vlm=0/2, fallback=0" in run.stderr, "progress bar"
    noise = [n for n in ("Gym has been unmaintained", "private macro file", "INFO:RLinf") if n in run.stderr]
    assert not noise, "the libraries' known start-up notices are silenced"
    assert "POST /score" in (run.run_dir / "reward_server.log").read_text()
    # The exported key never reached the server (every episode was judged) nor any file.
    written = [
        f for f in run.run_dir.rglob("*") if f.is_file() and f.suffix in (".json", ".jsonl", ".log", ".md")
    ]
    assert written and not [f for f in written if EXPORTED_KEY in f.read_text(errors="replace")]
    with pytest.raises(requests.ConnectionError):  # the job stopped the server it started
        requests.get(settings["endpoint"].replace("/score", "/health"), timeout=2)


@pytest.mark.libero
@pytest.mark.slow
@pytest.mark.parametrize("policy", ["random", "expert"])
def test_job_with_a_moving_policy_against_an_endpoint(
    reward_eval_run: EvalRun, tmp_path: Path, policy: str
) -> None:
    run_dir = tmp_path / "run"
    server = ServerProcess(
        ["--backend", "fixed_score", "--model", "none", "--video-root", str(tmp_path)],
        tmp_path / "server.log",
        plugins=("tests.support.fake_backends",),
    ).wait_ready()
    try:
        result = run_reward_eval(
            "run",
            *("--tasks", str(RUN_TASK), "--episodes-per-task", "1", "--num-envs", "1"),
            *("--max-episode-steps", str(RUN_MAX_STEPS), "--policy", policy, "--policy-seed", "3"),
            *("--endpoint", server.endpoint, "--backend", "fixed_score", "--threshold", "0.75"),
            *("--out", str(run_dir)),
        )
    finally:
        server.stop()
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    [record] = _records(run_dir)
    # fixed_score answers 0.8 by default: a real judgement, not a fallback.
    assert record["fallback"] is False and record["vlm_score"] == pytest.approx(0.8)
    assert record["vlm_success"] is True and record["success_threshold"] == 0.75
    # Random and expert move the arm; the zero policy of the shared run leaves the scene still
    # (measured: 3.0% and 7.1% of the pixels moved, against 0.4% of codec noise and settling).
    assert _motion(record["video_path"]) > 4 * _motion(_records(reward_eval_run.run_dir)[0]["video_path"])
    assert json.loads((run_dir / "settings.json").read_text())["model"] == "the server's (--endpoint)"


MOVED = 25  # of 255: a change this large is the scene moving, not the codec (crf 17)


def _motion(video_path: str) -> float:
    """The share of pixels that moved between the first and the last frame of a video: their
    largest channel changed by more than :data:`MOVED`. (The mean change, 2.9 for 8 random steps
    against 1.0 for a still scene, is mostly codec noise spread over every pixel.)"""
    frames = read_video_frames(video_path).astype(float)
    return float((np.abs(frames[-1] - frames[0]).max(axis=-1) > MOVED).mean())
