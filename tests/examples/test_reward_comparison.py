"""The learning comparison's pure parts: runs, their overrides, the time split and the summary."""

from __future__ import annotations

import importlib
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from examples.embodiment.reward_comparison import cli, results
from examples.embodiment.reward_comparison.runs import RUNS, overrides, parse_runs, start_overrides


def test_runs_are_parsed_in_order_and_bad_names_are_named() -> None:
    assert [r.name for r in parse_runs("lenient, native")] == ["lenient", "native"]
    with pytest.raises(ValueError, match="unknown or no run names \\['nativ'\\]; valid: native, classifier"):
        parse_runs("nativ")
    with pytest.raises(ValueError, match="names a run twice"):
        parse_runs("native,native")


def test_a_run_differs_from_the_others_only_in_its_reward_model_block() -> None:
    native = overrides(RUNS["native"].block(None), seed=3, steps=6)
    lenient = overrides(RUNS["lenient"].block("http://127.0.0.1:1/score"), seed=3, steps=6)
    assert native == [
        "runner.max_steps=6",
        "env.train.seed=3",
        "actor.seed=3",
        "env.train.reward_model.enable=False",
    ]
    assert lenient[:3] == native[:3]
    assert all(o.startswith("env.train.reward_model.") for o in lenient[3:])
    assert "env.train.reward_model.endpoint='http://127.0.0.1:1/score'" in lenient
    assert "env.train.reward_model.guard.action=warn" in lenient
    assert "env.train.reward_model.binary_reward=False" in overrides(RUNS["tiny_vlm"].block("u"), 0, 1)


def test_a_comparison_trains_as_many_steps_as_a_cpu_learn_run_unless_told() -> None:
    from omegaconf import OmegaConf

    config_steps = OmegaConf.load(cli.LEARN_CONFIG).runner.max_steps
    assert cli.build_parser().parse_args(["--out", "x"]).steps == config_steps
    assert config_steps >= 5, "the summary's test pools the first 2 steps against the last 3"
    assert cli.build_parser().parse_args(["--out", "x", "--steps", "2"]).steps == 2


def test_starts_are_named_and_the_default_is_the_configs() -> None:
    assert start_overrides("default") == []
    assert start_overrides("rare") == ["actor.model.release_mean=[[0.0, -0.08], [0.0, 0.085]]"]
    with pytest.raises(ValueError, match="--start 'often' is not a start; valid: default, rare"):
        start_overrides("often")


@pytest.mark.parametrize(
    ("argv", "tail"),
    [
        ([], ["env.train.reward_model.enable=False"]),
        (["--start", "rare"], ["env.train.reward_model.enable=False", *start_overrides("rare")]),
        (
            ["--start", "rare", "--override", "env.train.total_num_envs=2"],
            ["env.train.reward_model.enable=False", *start_overrides("rare"), "env.train.total_num_envs=2"],
        ),
        (
            ["--judge-only", "--override", "env.train.total_num_envs=2"],
            [
                "env.train.reward_model.enable=False",
                "cpu_learn.judge_only=True",
                "env.train.total_num_envs=2",
            ],
        ),
    ],
    ids=["default", "rare", "rare-and-override", "judge-only"],
)
def test_the_run_command_carries_the_start_and_the_overrides(argv: list[str], tail: list[str]) -> None:
    args = cli.build_parser().parse_args(["--out", "OUT", "--seed", "2", "--steps", "3", *argv])
    command = cli.run_command(RUNS["native"].block(None), args)
    assert command[2:4] == ["--cpu-learn", "libero_10_grpo_openvlaoft"]
    assert command[4:7] == ["runner.max_steps=3", "env.train.seed=2", "actor.seed=2"]
    assert command[7:] == tail


@pytest.mark.parametrize("name", [name for name, spec in RUNS.items() if spec.judge is not None])
def test_a_judged_run_stops_at_a_failed_call_rather_than_train_on_a_fallback(name: str) -> None:
    block = RUNS[name].block("http://127.0.0.1:1/score")
    assert block["fail_on_request_error"] is True and block.get("fallback_score") is None


@pytest.mark.parametrize(
    ("extra", "text"),
    [
        ({}, "success 0.25 of 16, groups trained on 0.50, with a spread 1.00"),
        (
            {"env/vlm_success": {0: 0.5}, "env/vlm_fallback": {0: 0.0}},
            "success 0.25 of 16, judged 0.50, fallbacks 0, groups trained on 0.50, with a spread 1.00",
        ),
        (
            {"env/vlm_success": {0: 0.5}, "env/vlm_fallback": {0: 0.1875}},
            "success 0.25 of 16, judged 0.50, fallbacks 3, groups trained on 0.50, with a spread 1.00",
        ),
    ],
    ids=["native", "judged", "judged-with-fallbacks"],
)
def test_the_step_line_says_what_the_step_trained_on(extra: dict, text: str) -> None:
    scalars = {
        "env/success_once": {0: 0.25},
        "env/num_trajectories": {0: 16.0},
        "rollout/groups_with_gradient": {0: 0.5},
        "rollout/groups_with_spread": {0: 1.0},
        **extra,
    }
    assert results.step_line(scalars, 0) == text


SCALARS = {
    "time/step": {0: 100.0, 1: 90.0},
    "time/env/env/bootstrap_step": {0: 8.0, 1: 7.0},
    "time/env/env_interact_step": {0: 80.0, 1: 75.0},
    "time/actor/run_training": {0: 1.0, 1: 1.0},
    "time/actor/actor/compute_adv": {0: 0.5, 1: 0.5},
    "env/vlm_judge_seconds": {0: 4.0, 1: 9.0},
}


def test_the_time_split_takes_judging_out_of_the_rollout_and_start_up_out_of_the_wall() -> None:
    split = results.time_split(SCALARS, wall_s=250.0)
    assert split == {
        "start_up": 60.0,
        "resets": 15.0,
        "rollout": 146.0,
        "judging": 9.0,
        "actor_update": 3.0,
        "wall": 250.0,
    }


def _outcomes(successes: list[tuple[int, int]], judged: bool = False) -> list:
    """Steps of two groups of 8: ``successes[k]`` the successes of each group at step k; a judge
    (if any) that says yes to every episode."""
    return [
        [
            [
                {"success": e < n, "judged": True if judged else None, "fallback": False, "length": 400}
                for e in range(8)
            ]
            for n in step
        ]
        for step in successes
    ]


def test_the_summary_gives_the_rise_with_its_interval_the_endpoint_and_the_judges_pooled_rates() -> None:
    from examples.embodiment.reward_comparison import statistics

    counts = [(2, 2), (3, 3), (4, 4), (6, 6), (7, 7)]
    unjudged = {"judged_success_rate": None, "false_positive_rate": None, "recall": None}
    steps = [
        {"step": k + 1, "episodes": 16, "success_rate": sum(c) / 16, "groups_with_gradient": 1.0, **unjudged}
        for k, c in enumerate(counts)
    ]
    native = {"steps": steps, "time_s": results.time_split(SCALARS, 250.0), "guard_tripped_at": 3}
    native["outcomes"] = _outcomes(counts)
    native["statistics"] = statistics.run_statistics(native["outcomes"])
    judged = {**native, "guard_tripped_at": None, "outcomes": _outcomes([(2, 2)] * 5, judged=True)}
    judged["statistics"] = statistics.run_statistics(judged["outcomes"])
    ends = statistics.endpoints({"native": {0: native["outcomes"]}, "yes": {0: judged["outcomes"]}})
    lines = results.summary_lines({"native": native, "yes": judged}, ends)
    assert lines[0].startswith("native: success 0.31 -> 0.71, +0.40 [")
    assert "58% of the gap;" in lines[0] and "; success >= 0.5 at step 3;" in lines[0]
    assert "groups trained on 1.00" in lines[0] and lines[0].endswith("guard tripped at step 3")
    assert "judge" not in lines[0]
    assert "last 3 minus native -0.46 [" in lines[1]
    assert (
        "judge false-positive rate 1.00 [1.00, 1.00], recall 1.00 [1.00, 1.00] (pooled over episodes)"
        in lines[1]
    )
    assert "fallbacks 0" in lines[1]
    short = {**native, "steps": steps[:2], "outcomes": native["outcomes"][:2]}
    short["statistics"] = statistics.run_statistics(short["outcomes"])
    assert "success n/a (fewer than 5 steps)" in results.summary_lines({"native": short})[0]


def test_an_interrupted_comparison_says_how_to_resume_and_exits_130(monkeypatch, tmp_path, capsys) -> None:
    def interrupted(spec, args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "run_once", interrupted)
    monkeypatch.setattr(cli.signal, "signal", lambda *args: None)  # keep pytest's own SIGTERM handling
    assert cli.main(["--out", str(tmp_path), "--runs", "native"]) == cli.EXIT_INTERRUPTED == 130
    assert "[compare] native interrupted; rerun the same command to resume." in capsys.readouterr().out


def test_a_run_that_fails_stops_the_comparison_before_any_row_is_written(
    monkeypatch, tmp_path, capsys
) -> None:
    # A judged run fails fast at a scoring call that failed (its judge stopped mid-run, say): its
    # driver exits non-zero, and the comparison writes neither learning.json nor compare.md.
    ran = []

    def judged_run_fails(spec, args):
        ran.append(spec.name)
        return 0 if spec.name == "native" else 1

    monkeypatch.setattr(cli, "run_once", judged_run_fails)
    monkeypatch.setattr(cli.signal, "signal", lambda *args: None)
    assert cli.main(["--out", str(tmp_path), "--runs", "native,classifier,lenient"]) == 1
    assert ran == ["native", "classifier"], "the comparison stops at the failed run"
    assert "[compare] classifier failed with exit status 1; rerun the same command to resume." in (
        capsys.readouterr().out
    )
    assert not (tmp_path / "learning.json").exists() and not (tmp_path / "compare.md").exists()


@pytest.fixture
def sigint_ignored() -> Iterator[None]:
    """SIGINT ignored, as in a shell's background job; its handler restored after the test."""
    set_handler = signal.signal  # taken before a test replaces it
    previous = set_handler(signal.SIGINT, signal.SIG_IGN)
    yield
    set_handler(signal.SIGINT, previous)


def test_a_judge_that_never_gets_ready_stops_the_run_it_started_beside(
    sigint_ignored, monkeypatch, tmp_path, capsys
) -> None:
    """The judge loads while its run starts up; a server that exits instead ends the run, not a
    hang: by SIGINT, although the comparison started with SIGINT ignored (a background job)."""
    from examples.embodiment.reward_comparison import judges, runs

    broken = judges.Judge("no_such_backend", lambda judges_dir: tmp_path / "model")
    monkeypatch.setitem(judges.JUDGES, "broken", broken)
    monkeypatch.setitem(
        runs.RUNS, "broken", runs.RunSpec("broken", "a judge that cannot start", judge="broken")
    )
    launched = []
    run_command = ["sleep", "300"]  # the run: a process that would outlive the test if left running

    def sleeper(block, args):
        launched.append(block["endpoint"])
        return run_command

    popen = cli.subprocess.Popen  # the same module the server's launcher uses: both are seen
    started = []
    monkeypatch.setattr(cli, "run_command", sleeper)
    monkeypatch.setattr(
        cli.subprocess, "Popen", lambda *a, **k: started.append(popen(*a, **k)) or started[-1]
    )
    monkeypatch.setattr(cli.signal, "signal", lambda *args: None)
    assert cli.main(["--out", str(tmp_path / "out"), "--runs", "broken"]) == cli.EXIT_FAILED == 1
    out = capsys.readouterr().out
    assert "[compare] broken: its judge could not start:" in out and "reward_server.log" in out
    assert launched and launched[0].startswith("http://127.0.0.1:"), "the run got the judge's endpoint"
    run = [p for p in started if p.args[-2:] == run_command]
    assert [p.poll() for p in run] == [-2], "the run was launched, then stopped by SIGINT"
    assert not (tmp_path / "out" / "broken" / cli.FINISHED).exists()


@pytest.fixture
def near_miss_set(monkeypatch, tmp_path):
    """The near-miss judge's set in ``tmp_path``, its making and the classifier's training recorded."""
    from examples.embodiment.reward_comparison import judges

    data = tmp_path / "data_near_miss"
    calls = {"make": [], "train": []}

    def make(command, **kwargs):
        calls["make"].append(command)
        data.mkdir()
        (data / "manifest.json").write_text("{}")
        return cli.subprocess.CompletedProcess(command, 0)

    def train(checkpoint, options, data_dir):
        calls["train"].append((checkpoint, tuple(options), data_dir))
        return 0

    monkeypatch.setattr(judges, "NEAR_MISS_DATA", data)
    monkeypatch.setattr(judges.subprocess, "run", make)
    monkeypatch.setattr(judges.setup_checkpoint, "ensure", train)
    return data, calls


def test_the_near_miss_judge_makes_its_set_once_then_trains_on_it(near_miss_set, tmp_path) -> None:
    from examples.embodiment.reward_comparison import judges

    data, calls = near_miss_set
    first, second = (judges.JUDGES["near_miss"].prepare(tmp_path) for _ in range(2))
    assert first == second == judges.setup_checkpoint.CHECKPOINT.with_name("libero_basket_resnet_near_miss")
    [command] = calls["make"]  # the second finds the set's manifest
    assert command[1:] == [str(judges.DATA_SCRIPT), "--variants", "near_miss", "--out", str(data)]
    assert calls["train"] == [(first, judges.NEAR_MISS_OPTIONS, data)] * 2


@pytest.mark.parametrize(
    ("judge", "data"),
    [("classifier", "shipped"), ("lenient", "shipped"), ("progress", "shipped"), ("near_miss", "near_miss")],
    ids=["classifier", "lenient", "progress", "near_miss"],
)
def test_each_classifier_judge_trains_on_its_own_set(near_miss_set, tmp_path, judge: str, data: str) -> None:
    from examples.embodiment.reward_comparison import judges

    near_miss_data, calls = near_miss_set
    judges.JUDGES[judge].prepare(tmp_path)
    expected = {"shipped": judges.DEFAULT_DATA_DIR, "near_miss": near_miss_data}[data]
    assert [data_dir for _, _, data_dir in calls["train"]] == [expected]


def test_a_set_that_cannot_be_made_is_a_judge_error(near_miss_set, monkeypatch, tmp_path) -> None:
    from examples.embodiment.reward_comparison import judges

    monkeypatch.setattr(
        judges.subprocess, "run", lambda command, **kw: cli.subprocess.CompletedProcess(command, 1)
    )
    with pytest.raises(
        judges.JudgeError, match=r"making the labelled set .*data_near_miss ended with exit status 1"
    ):
        judges.JUDGES["near_miss"].prepare(tmp_path)


@pytest.mark.parametrize("judge", ["classifier", "lenient", "progress", "near_miss"])
def test_a_classifier_judges_stamp_is_the_one_its_training_writes(
    near_miss_set, tmp_path, judge: str
) -> None:
    """Known before the judge is made ready (near_miss's once its set is made): a finished run's
    judge is compared with the one a new run would get, without training it."""
    from examples.embodiment.reward_comparison import judges

    _, calls = near_miss_set
    stamp = judges.JUDGES[judge].stamp
    before = stamp(tmp_path)
    assert not calls["make"] and not calls["train"], "a stamp makes nothing"
    assert (before is None) == (judge == "near_miss"), "None only while the near-miss set is not made"
    judges.JUDGES[judge].prepare(tmp_path)
    [(_, options, data_dir)] = calls["train"]
    assert stamp(tmp_path) == judges.setup_checkpoint.stamp(options, data_dir)
    assert before in (None, stamp(tmp_path))


def test_the_classifier_judges_stamps_differ() -> None:
    from examples.embodiment.reward_comparison import judges

    stamps = [judges.JUDGES[name].stamp(Path("unused")) for name in ("classifier", "lenient", "progress")]
    assert len(set(stamps)) == 3 and None not in stamps


def test_the_tiny_vlms_stamp_is_a_hash_of_its_config_and_weights(tmp_path) -> None:
    from examples.embodiment.reward_comparison import judges

    stamp = judges.JUDGES["tiny_vlm"].stamp
    assert stamp(tmp_path) is None, "not built yet"
    model = tmp_path / judges.TINY_VLM
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"weights")
    built = stamp(tmp_path)
    (model / "tokenizer.json").write_text("{}")
    assert stamp(tmp_path) == built
    (model / "model.safetensors").write_bytes(b"other weights")
    assert stamp(tmp_path) not in (built, None)


def test_a_plugins_judge_has_no_stamp(tmp_path) -> None:
    from examples.embodiment.reward_comparison import judges

    importlib.import_module("tests.support.learning_judge")  # registers the judge "wire"
    assert judges.JUDGES["wire"].stamp(tmp_path) is None


def test_an_episodes_length_is_what_the_loss_counts_not_the_envs_elapsed_steps(tmp_path) -> None:
    import torch

    dones = torch.zeros(4, 2, 2, dtype=torch.bool)  # 3 chunks of 2 steps, 2 trajectories, and the first row
    dones[2, 0, 0] = dones[2:, 0, :] = True  # trajectory 0 ends at its 3rd step (a success) and stays done
    dones[3, 1, 1] = True  # trajectory 1 runs to the horizon, 6 steps
    torch.save({"dones": dones}, tmp_path / "grpo_batch_step1_rank0.pt")
    episode = {"success": False, "judged": None, "fallback": False, "length": 6}  # the env says 6 for both
    steps = [[[dict(episode, success=True), dict(episode)]]]
    assert [e["length"] for e in results.with_loss_lengths(steps, tmp_path)[0][0]] == [3, 6]
    unrecorded = [[[dict(episode)]]]  # no batch recorded: the env's count stays
    assert results.with_loss_lengths(unrecorded, tmp_path / "none")[0][0][0]["length"] == 6
    with pytest.raises(ValueError, match="step 1: 2 trajectories in the actor's batch, 1 outcomes"):
        results.with_loss_lengths([[[dict(episode)]]], tmp_path)
