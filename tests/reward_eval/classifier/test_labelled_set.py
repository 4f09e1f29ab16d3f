"""The labelled frame set: its manifest, its split by initial state, the states never trained on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reward_eval.classifier.labelled_set import (
    DEFAULT_DATA_DIR,
    RESERVED_STATES,
    TEST_FRACTION,
    LabelledEpisode,
    LabelledFrames,
    check_split,
    choose_held_out,
    choose_test,
    load_set,
    write_manifest,
)
from reward_eval.commands.run import build_parser
from reward_eval.job.main_job import MAIN_JOB, SELF_TEST
from tests.support.server import REPO


def episode(task: int, trial: int, split: str, video: str = "v.mp4") -> LabelledEpisode:
    frames = LabelledFrames(video, (0, 5), (False, True), (0.0, 1.0))
    return LabelledEpisode(task, "put it there", trial, "expert", {}, 1, True, 5, split, frames)


def test_reserved_states_are_the_main_jobs_and_the_self_tests() -> None:
    assert MAIN_JOB.states() | SELF_TEST.states() == RESERVED_STATES
    assert MAIN_JOB.states() == {(0, 0), (0, 1), (1, 0), (1, 1)} and (1, 2) in SELF_TEST.states()


@pytest.mark.parametrize(
    ("path", "uses"),
    [
        ("scripts/run.sh", "-m reward_eval.job.main_job)"),
        ("scripts/make_judge_self_test.py", "*SELF_TEST.run_args()"),
    ],
    ids=["run.sh", "self-test"],
)
def test_the_scripts_play_the_one_definition(path, uses) -> None:
    text = (REPO / path).read_text()
    assert uses in text and "--episodes-per-task" not in text and "--max-episode-steps" not in text


def test_the_main_jobs_printed_arguments_are_its_episodes() -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "reward_eval.job.main_job"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    ).stdout.splitlines()
    args = build_parser().parse_args(printed)
    assert (tuple(args.tasks), args.episodes_per_task) == (MAIN_JOB.tasks, MAIN_JOB.episodes_per_task)
    assert (args.max_episode_steps, args.policy_kwargs) == (400, {"drop": "carry", "drop_prob": 0.5})


@pytest.mark.parametrize(
    ("episodes", "problem"),
    [
        ([episode(0, 5, "train"), episode(0, 5, "held_out")], "in more than one split"),
        ([episode(0, 5, "test"), episode(0, 5, "held_out")], "in more than one split"),
        ([episode(1, 2, "train")], "reserved initial states"),
    ],
    ids=["trained-and-held-out", "test-and-held-out", "reserved-trained"],
)
def test_check_split_refuses(episodes, problem) -> None:
    with pytest.raises(ValueError, match=problem):
        check_split(episodes)


def test_held_out_holds_every_reserved_state_and_a_share_of_each_task() -> None:
    states = [(task, trial) for task in (0, 1, 7) for trial in range(50)]
    held = choose_held_out(states, 0.25, seed=0)
    assert held >= RESERVED_STATES
    for task in (0, 1, 7):
        others = [s for s in held if s[0] == task and s not in RESERVED_STATES]
        reserved = sum(1 for s in RESERVED_STATES if s[0] == task)
        assert len(others) == int((50 - reserved) * 0.25 + 0.5)  # rounded half up
    assert held == choose_held_out(states, 0.25, seed=0) != choose_held_out(states, 0.25, seed=1)


def test_test_states_are_half_of_each_tasks_held_out_states_never_a_reserved_one() -> None:
    states = [(task, trial) for task in (0, 1, 7) for trial in range(50)]
    held = choose_held_out(states, 0.25, seed=0)
    test = choose_test(held, TEST_FRACTION, seed=0)
    assert test < held and not test & RESERVED_STATES
    for task in (0, 1, 7):
        pool = [s for s in held if s[0] == task and s not in RESERVED_STATES]
        assert len([s for s in test if s[0] == task]) == int(len(pool) * TEST_FRACTION)
    assert test == choose_test(held, TEST_FRACTION, seed=0) != choose_test(held, TEST_FRACTION, seed=1)


def test_manifest_round_trip(tmp_path: Path) -> None:
    episodes = [episode(0, 5, "train", "a.mp4"), episode(7, 1, "held_out", "b.mp4")]
    for e in episodes:
        (tmp_path / e.served.video).write_bytes(b"")
    write_manifest(tmp_path, episodes, {"suite": "libero_10"})
    loaded = load_set(tmp_path)
    assert loaded.episodes == tuple(episodes)
    assert [e.state for e in loaded.split("held_out")] == [(7, 1)]


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda root: (root / "manifest.json").unlink(), "is not a labelled frame set"),
        (lambda root: (root / "a.mp4").unlink(), "videos are missing"),
        (
            lambda root: (root / "manifest.json").write_text('{"episodes": [{}]}'),
            "is not a labelled frame set",
        ),
    ],
    ids=["no-manifest", "missing-video", "bad-episode"],
)
def test_load_set_refuses_a_directory_that_is_not_a_set(tmp_path: Path, damage, problem) -> None:
    (tmp_path / "a.mp4").write_bytes(b"")
    write_manifest(tmp_path, [episode(0, 5, "train", "a.mp4")], {})
    damage(tmp_path)
    with pytest.raises(ValueError, match=problem):
        load_set(tmp_path)


def test_shipped_set_splits_by_state_and_never_trains_on_reserved_states() -> None:
    shipped = load_set(DEFAULT_DATA_DIR)  # check_split runs on load
    trained = {e.state for e in shipped.split("train")}
    held = {e.state for e in shipped.split("held_out")}
    test = {e.state for e in shipped.split("test")}
    assert trained and held and test and not trained & (held | test) and not held & test
    assert not trained & RESERVED_STATES and not test & RESERVED_STATES
    settings = shipped.settings
    states = [(t, k) for t in settings["tasks"] for k in range(settings["trials"])]
    assert held | test == choose_held_out(states, settings["holdout_fraction"], settings["seed"])
    assert test == choose_test(held | test, settings["test_fraction"], settings["seed"])
    for split in ("held_out", "test"):  # every task is measured, with both outcomes overall
        assert {state[0] for state in {e.state for e in shipped.split(split)}} == {0, 1, 7}
        assert {e.native_success for e in shipped.split(split)} == {True, False}


def test_shipped_labels_are_consistent() -> None:
    """Within the episode a judge is sent, the goal first holds at its end step, if at all."""
    shipped = json.loads((DEFAULT_DATA_DIR / "manifest.json").read_text())
    for e in shipped["episodes"]:
        served = e["served"]
        assert served["steps"][-1] == e["episode_length"]
        assert served["success"][-1] == e["native_success"]
        assert not any(served["success"][:-1])
        assert all(g == 1.0 for g, s in zip(served["goal_fraction"], served["success"], strict=False) if s)
