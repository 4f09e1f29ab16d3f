"""scripts/make_classifier_data.py's policy tables, without the simulator: which policy plays which
initial state (the episodes themselves: tests/reward_eval/classifier/test_make_classifier_data.py)."""

from __future__ import annotations

import argparse

import pytest

from reward_eval.policies.expert import ExpertPolicy
from tests.support.labelled_episodes import data_script
from tests.support.server import REPO

script = data_script()
TABLES = sorted(script.VARIANT_TABLES)
# The tables of sets drawn beside the shipped one (the others play the learning policy instead).
BESIDE_DEFAULT = [name for name in TABLES if name not in script.LEARNING_TABLES]


def test_the_default_table_is_the_shipped_sets() -> None:
    from reward_eval.classifier.labelled_set import load_set

    shipped = load_set(script.DEFAULT_DATA_DIR)
    assert shipped.settings["variants"] == [list(v) for v in script.VARIANTS]
    for episode in shipped.episodes:
        assert script.variant_of(*episode.state)[0] == episode.variant, episode.state


@pytest.mark.parametrize("name", TABLES, ids=TABLES)
def test_every_variant_is_a_valid_policy(name: str) -> None:
    for _, policy, kwargs in script.VARIANT_TABLES[name]:
        if policy == "expert":
            ExpertPolicy(**kwargs)  # valid options, or ValueError


@pytest.mark.parametrize("name", BESIDE_DEFAULT, ids=BESIDE_DEFAULT)
def test_a_table_keeps_the_failures_on_the_same_trials(name: str) -> None:
    """A table is as long as the default and differs only among its successes' turns, so a
    state that fails by a drop, noise or the random policy in one set fails so in every set."""
    table, default = script.VARIANT_TABLES[name], script.VARIANTS
    assert len(table) == len(default)
    for ours, theirs in zip(table, default, strict=True):
        assert ours == theirs or theirs == script.EXPERT


def learning_policy_means(table: str) -> set[tuple[tuple[float, ...], ...]]:
    """The release means of ``table``'s variants that play the learning comparison's policy: its
    spread (cpu_learn/expert.yaml's ``release_std``), checked here."""
    from omegaconf import OmegaConf

    model = OmegaConf.load(REPO / "examples/embodiment/config/cpu_learn/expert.yaml").actor.model
    releases = [kwargs for _, _, kwargs in script.VARIANT_TABLES[table] if "release" in kwargs]
    assert {kwargs["place_noise"] for kwargs in releases} == {model.release_std}
    start = tuple(map(tuple, OmegaConf.to_container(model.release_mean)))
    means = {tuple(map(tuple, kwargs["release"])) for kwargs in releases}
    assert start in means, f"{table} does not play the policy's start {start}"
    return means


def test_release_plays_the_learning_policy_from_its_start_to_the_experts_points() -> None:
    """The release variants are the learning comparison's policy (its spread, its starting means)
    and the means it moves towards, the expert's own points."""
    assert ((0.0, -0.03), (0.0, 0.03)) in learning_policy_means("release")


def test_learning_plays_only_the_learning_policy_from_its_start_inwards() -> None:
    """Every variant of ``learning`` is the policy, at its start and at means nearer the basket's
    centre than it (where its runs go), none as near as the expert's own points."""
    table = script.VARIANT_TABLES["learning"]
    assert all(policy == "expert" and "release" in kwargs for _, policy, kwargs in table)
    offsets = sorted(abs(mean[1][1]) for mean in learning_policy_means("learning"))
    assert offsets == [0.05, 0.06, 0.07]


def test_near_miss_lets_two_experts_in_ten_go_beside_the_basket() -> None:
    table = script.VARIANT_TABLES["near_miss"]
    assert table.count(script.BESIDE) == 2 and table.count(script.EXPERT) == 3
    assert script.variant_of(0, 3, table) == script.BESIDE and script.variant_of(0, 3) == script.EXPERT


@pytest.mark.parametrize("name", TABLES, ids=TABLES)
def test_the_manifest_names_its_table(name: str) -> None:
    args = argparse.Namespace(
        tasks=[0],
        trials=2,
        trial_ids=None,
        camera=64,
        seed=0,
        variants=name,
        sampled=None,
        train_only=False,
        to_horizon=True,
    )
    settings = script.settings(args)
    assert settings["variant_table"] == name and settings["to_horizon"]
    assert settings["variants"] == [list(v) for v in script.VARIANT_TABLES[name]]


def test_an_unknown_table_is_named_with_the_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        script.main(["--variants", "lenient", "--out", "/nonexistent/never-made"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'lenient' (choose from 'default', 'learning', 'near_miss', 'release')" in err


STATE_CASES = [
    ("libero", [], range(0, 40), {"train", "held_out", "test"}),
    ("sampled-train-only", ["--sampled", "--train-only"], range(1000, 1040), {"train"}),
    ("sampled-drawn", ["--sampled"], range(1000, 1040), {"train", "held_out", "test"}),
    ("sampled-from-2000", ["--sampled", "2000", "--train-only"], range(2000, 2040), {"train"}),
    ("named", ["--trial-ids", "2,5,14,1003"], [2, 5, 14, 1003], {"train", "held_out"}),
]


@pytest.mark.parametrize(("name", "options", "trials", "sides"), STATE_CASES, ids=[c[0] for c in STATE_CASES])
def test_the_states_and_their_split(name: str, options: list[str], trials: range, sides: set[str]) -> None:
    """``--sampled [FIRST]`` plays the sampler's trials (1000 on by default), ``--train-only``
    trains on every one; a drawn split holds LIBERO's reserved states out, whichever it draws from."""
    from reward_eval.classifier.labelled_set import RESERVED_STATES

    trials_option = [] if "--trial-ids" in options else ["--trials", "40"]
    args = script.parse_args(["--tasks", "0,1", *trials_option, *options])
    assert list(script.trials(args)) == list(trials)
    states = [(task, trial) for task in args.tasks for trial in trials]
    split_of = script.splits(args, states)
    assert set(split_of) == set(states) and set(split_of.values()) == sides
    assert all(split_of[s] != "train" for s in RESERVED_STATES if s in split_of)


@pytest.mark.parametrize("first", ["999", "x"], ids=["below-1000", "not-a-number"])
def test_a_first_sampled_trial_that_is_not_one_is_refused(
    capsys: pytest.CaptureFixture[str], first: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        script.parse_args(["--sampled", first])
    assert exit_info.value.code == 2
    assert f"'{first}' is not a sampled trial: give an integer >= 1000." in capsys.readouterr().err


BAD_TRIAL_IDS = [
    ("beyond-libero", ["--trial-ids", "2,50"], "'2,50' is not a list of trials"),
    ("repeated", ["--trial-ids", "2,2"], "'2,2' is not a list of trials"),
    ("not-a-number", ["--trial-ids", "2,x"], "'2,x' is not a list of trials"),
    ("with-trials", ["--trials", "3", "--trial-ids", "2"], "not allowed with argument --trials"),
    ("with-sampled", ["--sampled", "--trial-ids", "1003"], "--trial-ids names its states itself"),
]


@pytest.mark.parametrize(("name", "options", "says"), BAD_TRIAL_IDS, ids=[c[0] for c in BAD_TRIAL_IDS])
def test_bad_trial_ids_are_refused(
    capsys: pytest.CaptureFixture[str], name: str, options: list[str], says: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        script.parse_args(options)
    assert exit_info.value.code == 2
    assert says in capsys.readouterr().err


def test_the_manifest_records_the_trial_ids() -> None:
    args = script.parse_args(["--tasks", "0", "--trial-ids", "2,5", "--variants", "learning"])
    settings = script.settings(args)
    assert (settings["trials"], settings["trial_ids"]) == (2, [2, 5])
    assert script.settings(script.parse_args(["--trials", "3"]))["trial_ids"] is None
