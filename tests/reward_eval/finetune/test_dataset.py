"""The data set from kept videos: labels of the episodes and their counterfactuals, the split by
initial state, every episode as the env sent it and re-encoded like its counterfactuals (synthetic
run dirs; a second or two)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from reward_eval.analysis.perturbations import perturbation_names
from reward_eval.finetune.dataset import (
    HELD_OUT,
    REENCODED,
    SENT,
    DataError,
    build_examples,
    check_examples,
    run_episodes,
    split_episodes,
)
from reward_eval.finetune.instructions import WRONG_INSTRUCTION
from reward_eval.judge.counterfactuals import decode_frames

WRONG = "put both the cream cheese box and the butter in the basket"


def test_each_counterfactual_of_a_success_is_a_failure_of_its_episodes_group(
    make_run: Callable[..., Path], tmp_path: Path
) -> None:
    run = make_run("run", [(0, True), (1, False), (2, True)])
    episodes = run_episodes([run])
    examples, unreadable = build_examples(
        episodes, {"state:2": HELD_OUT}, tmp_path / "videos", perturbation_names(), lambda e: WRONG, seed=0
    )
    assert unreadable == []
    rows = [(x.group, x.source, x.encoding, x.label, x.held_out, x.frames) for x in examples]
    made = [(name, False, 6 if name == "clipped" else 12) for name in perturbation_names()]
    assert rows == [
        ("state:0", "original", SENT, True, False, 12),
        ("state:0", "original", REENCODED, True, False, 12),
        *[("state:0", name, REENCODED, label, False, frames) for name, label, frames in made],
        ("state:1", "failure", SENT, False, False, 14),
        ("state:1", "failure", REENCODED, False, False, 14),
        ("state:2", "original", SENT, True, True, 16),
        ("state:2", "original", REENCODED, True, True, 16),
        *[
            ("state:2", name, REENCODED, label, True, 8 if name == "clipped" else 16)
            for name, label, _ in made
        ],
    ]
    assert {x.task_text for x in examples if x.source == "wrong_task"} == {WRONG}
    assert {x.task_text for x in examples if x.source != "wrong_task"} == {episodes[0].record.task_text}
    reversed_ = next(x for x in examples if x.source == "reversed" and x.group == "state:0")
    original = next(
        x for x in examples if x.source == "original" and x.group == "state:0" and x.encoding == REENCODED
    )
    # Both re-encoded the same way from the kept video's frames: the reverse, frame for frame, up
    # to the near-lossless codec (0.979 of 255 on average, the same every run since the encoder is
    # reproducible; it was 0.968-1.019 before); the frames in the wrong order differ by 14.4.
    backwards, forwards = decode_frames(reversed_.video)[0][::-1], decode_frames(original.video)[0]
    assert np.abs(backwards.astype(int) - forwards).mean() < 2.0


def test_each_episode_is_an_example_as_the_env_sent_it_byte_for_byte(
    make_run: Callable[..., Path], tmp_path: Path
) -> None:
    """The ``sent`` example is the kept MP4's own bytes (what ``rescore`` and the env send the served
    judge); its re-encode is another file of the same frames up to the codec, under the same label."""
    episodes = run_episodes([make_run("run", [(0, True), (1, False)])])
    examples, _ = build_examples(episodes, {}, tmp_path / "videos", (), lambda e: WRONG, seed=0)
    for episode in episodes:
        mine = {x.encoding: x for x in examples if x.episode == episode.key}
        sent, again = mine[SENT], mine[REENCODED]
        assert Path(sent.video).read_bytes() == Path(episode.video).read_bytes()
        assert sent.source_video == again.source_video == str(Path(episode.video).resolve())
        assert Path(again.video).read_bytes() != Path(sent.video).read_bytes()
        assert (sent.label, sent.source, sent.frames) == (again.label, again.source, again.frames)
        assert Path(sent.video).parent == Path(again.video).parent == tmp_path / "videos"


def test_no_counterfactuals_leaves_the_episodes_themselves(
    make_run: Callable[..., Path], tmp_path: Path
) -> None:
    episodes = run_episodes([make_run("run", [(0, True), (1, False)])])
    examples, _ = build_examples(episodes, {}, tmp_path, (), lambda e: WRONG, seed=0)
    assert [(x.source, x.encoding, x.label) for x in examples] == [
        ("original", SENT, True),
        ("original", REENCODED, True),
        ("failure", SENT, False),
        ("failure", REENCODED, False),
    ]


def test_a_success_under_wrong_instructions_is_a_failure_of_its_own_file_in_either_encoding(
    make_run: Callable[..., Path], tmp_path: Path
) -> None:
    """Each wrong instruction is a file of its own (readouts and input caches go by file), the
    success's own bytes as sent or re-encoded in turn; a failure gets none."""
    episodes = run_episodes([make_run("run", [(0, True), (1, False)])])
    texts = ("text a", "text b", "text c")
    examples, _ = build_examples(
        episodes, {}, tmp_path, (), lambda e: WRONG, seed=0, wrong_instructions=lambda e: texts
    )
    wrong = [x for x in examples if x.source == WRONG_INSTRUCTION]
    assert [(x.task_text, x.encoding, x.label) for x in wrong] == [
        ("text a", SENT, False),
        ("text b", REENCODED, False),
        ("text c", SENT, False),
    ]
    own = {x.encoding: Path(x.video).read_bytes() for x in examples if x.source == "original"}
    assert all(Path(x.video).read_bytes() == own[x.encoding] for x in wrong)
    assert len({x.video for x in examples}) == len(examples), "one file per example"
    assert {x.episode for x in wrong} == {episodes[0].key}, "the failure gets no wrong instruction"


def test_episodes_of_one_initial_state_go_to_the_same_side_across_runs(make_run: Callable[..., Path]) -> None:
    first = make_run("a", [(0, True), (1, True), (2, False), (3, False)])
    second = make_run("b", [(0, False), (1, False), (2, False), (3, True), (None, False)])
    episodes = run_episodes([first, second])
    held = split_episodes(episodes, 0.25, (), seed=0)
    assert held == {"state:3", "state:2"}, "one group of each kind (3 holds b's success), drawn by the seed"
    assert {e.group for e in episodes if e.record.reset_state_id is None} == {
        "episode:run1/vlm_episodes_train_rank0.jsonl:4"
    }


def _example_error(
    make_run: Callable[..., Path], tmp_path: Path, name: str, episodes: list, held: set[str]
) -> str:
    splits = dict.fromkeys(held, HELD_OUT)
    built, _ = build_examples(
        run_episodes([make_run(name, episodes)]), splits, tmp_path / name, (), lambda e: None, seed=0
    )
    with pytest.raises(DataError) as error:
        check_examples(built)
    return str(error.value)


def test_one_class_only_and_an_empty_held_out_split_are_refused(
    make_run: Callable[..., Path], tmp_path: Path
) -> None:
    assert "training split holds only failure examples (4)" in _example_error(
        make_run, tmp_path, "failures", [(0, False), (1, False)], set()
    )
    assert "held-out split would be empty" in _example_error(
        make_run, tmp_path, "mixed", [(0, True), (1, False)], set()
    )
