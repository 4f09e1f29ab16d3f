"""A labelled frame set as the fine-tune's data (``finetune --data``): its episodes, its own split,
their examples and the options that do not fit it (the shipped set's manifest and a six-episode
set of its MP4s; milliseconds to a second)."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from reward_eval import cli
from reward_eval.classifier.finetune_data import labelled_source, read_set, set_episodes, set_splits
from reward_eval.classifier.labelled_set import DEFAULT_DATA_DIR, RESERVED_STATES, load_set, write_manifest
from reward_eval.finetune.dataset import (
    HELD_OUT,
    REENCODED,
    SENT,
    TEST,
    TRAIN,
    DataError,
    build_examples,
    data_summary,
)


def test_every_episode_of_the_shipped_set_keeps_the_manifests_split_label_and_text() -> None:
    labelled = load_set(DEFAULT_DATA_DIR)
    episodes = set_episodes(labelled)
    assert len(episodes) == len(labelled.episodes) == len({e.key for e in episodes})
    for episode, source in zip(episodes, labelled.episodes, strict=True):
        assert (episode.split, episode.native_success, episode.task_text) == (
            source.split,
            source.native_success,
            source.task_text,
        )
        assert Path(episode.video).is_file() and episode.group == f"state:{source.task_id}:{source.trial_id}"
    sides = {}
    for e in episodes:
        sides.setdefault(e.group, set()).add(e.split)
    assert all(len(found) == 1 for found in sides.values()), "an initial state on one side only"
    splits = set_splits(episodes)
    assert set(splits.values()) == {HELD_OUT, TEST} and TRAIN not in splits.values()
    reserved = {f"state:{t}:{k}" for t, k in RESERVED_STATES}
    assert not reserved & {e.group for e in episodes if e.split == TRAIN}


def small_set(root: Path) -> Path:
    """Six episodes of the shipped set (a success and a failure of each split), as a set of their own."""
    labelled = load_set(DEFAULT_DATA_DIR)
    chosen = [
        next(e for e in labelled.episodes if e.split == split and e.native_success is success)
        for split in (TRAIN, HELD_OUT, TEST)
        for success in (True, False)
    ]
    root.mkdir()
    for e in chosen:
        shutil.copyfile(labelled.path(e.served), root / e.served.video)
    write_manifest(root, [replace(e, after=None) for e in chosen], labelled.settings)  # served MP4s only
    return root


def test_the_sets_split_decides_which_examples_train_and_which_are_held_out_or_test(tmp_path: Path) -> None:
    episodes = set_episodes(read_set(small_set(tmp_path / "set")))
    examples, unreadable = build_examples(
        episodes, set_splits(episodes), tmp_path / "videos", (), lambda e: None, seed=0
    )
    assert unreadable == []
    rows = sorted((x.split, x.label, x.encoding) for x in examples)
    assert rows == sorted(
        (split, success, encoding)
        for split in (TRAIN, HELD_OUT, TEST)
        for success in (True, False)
        for encoding in (SENT, REENCODED)
    )
    assert all(x.held_out == (x.split != TRAIN) for x in examples)
    sent = [x for x in examples if x.encoding == SENT]
    assert all(Path(x.video).read_bytes() == Path(x.source_video).read_bytes() for x in sent), (
        "the set's bytes"
    )
    groups = data_summary(examples, [])["groups"]
    assert len(groups[TRAIN]) == 2 and len(groups[TEST]) == 2 and set(groups[TEST]) < set(groups[HELD_OUT])


def moved(root: Path, source: Path, **change: object) -> Path:
    """The set in ``source`` copied to ``root`` with every episode's fields (and its settings'
    ``suite``, given as ``suite``) changed as ``change`` says."""
    labelled = load_set(source)
    suite = change.pop("suite", labelled.settings.get("suite"))
    shutil.copytree(source, root)
    episodes = [replace(e, **change) for e in labelled.episodes]
    write_manifest(root, episodes, {**labelled.settings, "suite": suite})
    return root


def test_several_sets_train_together_each_keyed_apart(tmp_path: Path) -> None:
    first = small_set(tmp_path / "a")
    second = moved(tmp_path / "b", first, trial_id=1000, split=TRAIN)
    source = labelled_source([first, second])
    keys = [e.key for e in source.episodes]
    assert len(keys) == len(set(keys)) == 12
    assert keys[:6] == [e.key for e in set_episodes(read_set(first))]
    assert all(k.startswith("set1/") for k in keys[6:])
    assert [e.seed_index for e in source.episodes] == list(range(12))
    assert source.splits == set_splits(source.episodes[:6]), "the second set only trains"
    assert [r["episodes_by_split"] for r in source.record["sets"]] == [
        {HELD_OUT: 2, TEST: 2, TRAIN: 2},
        {TRAIN: 6},
    ]


DISAGREEING = [
    ("a-state-on-two-splits", {"split": TEST}, r"initial states .* are in more than one split"),
    ("two-suites", {"suite": "libero_goal"}, r"the sets record different suites \(libero_10, libero_goal\)"),
]


@pytest.mark.parametrize(("name", "change", "message"), DISAGREEING, ids=[c[0] for c in DISAGREEING])
def test_sets_that_disagree_are_refused_in_one_sentence(
    tmp_path: Path, name: str, change: dict, message: str
) -> None:
    first = small_set(tmp_path / "a")
    with pytest.raises(DataError, match=message):
        labelled_source([first, moved(tmp_path / "b", first, **change)])


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    try:
        status = cli.main(["finetune", *argv])
    except SystemExit as exc:
        status = int(exc.code)
    return status, capsys.readouterr().err.strip().splitlines()[-1]


CASES = [
    (
        "runs-and-data",
        ["RUN", "--data", "SET"],
        2,
        r"give the run dirs to train on, or --data DIR .*\(not both\)",
    ),
    ("neither", [], 2, r"give the run dirs to train on, or --data DIR"),
    (
        "holdout-with-data",
        ["--data", "SET", "--holdout-tasks", "1"],
        2,
        r"--data trains on the labelled set's own split; drop --holdout-fraction and --holdout-tasks",
    ),
    ("not-a-set", ["--data", "RUN"], 3, r"cannot fine-tune: --data: .* is not a labelled frame set"),
]


@pytest.mark.parametrize(("name", "argv", "status", "message"), CASES, ids=[c[0] for c in CASES])
def test_data_options_that_do_not_fit_are_one_sentence_and_their_status(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    tiny_qwen_checkpoint: str,
    name: str,
    argv: list[str],
    status: int,
    message: str,
) -> None:
    (tmp_path / "run").mkdir()
    given = {"RUN": str(tmp_path / "run"), "SET": str(DEFAULT_DATA_DIR)}
    argv = [given.get(a, a) for a in argv]
    got, last = _run(capsys, *argv, "--model", tiny_qwen_checkpoint, "--out", str(tmp_path / "judge"))
    assert got == status and re.search(message, last), last
