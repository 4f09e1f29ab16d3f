"""The JSONL episode log: its file name (the worker's rank), and whole lines from several writers."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rlinf.envs.libero.episode_scoring import EpisodeLog, episode_log_path, worker_rank

NAMES = [
    ("train_rank0", "train", 0, "vlm_episodes_train_rank0.jsonl"),
    ("eval_rank12", "eval", 12, "vlm_episodes_eval_rank12.jsonl"),
]


@pytest.mark.parametrize(("split", "rank", "name"), [n[1:] for n in NAMES], ids=[n[0] for n in NAMES])
def test_episode_log_path(split: str, rank: int, name: str) -> None:
    assert episode_log_path("/logs", split, rank) == f"/logs/{name}"


BAD_PATHS = [
    ("unknown_split", "val", 0, r"split must be one of \('train', 'eval'\), got 'val'"),
    ("negative_rank", "train", -1, "rank must be an int >= 0, got -1"),
    ("bool_rank", "train", True, "rank must be an int >= 0, got True"),
]


@pytest.mark.parametrize(
    ("split", "rank", "message"), [b[1:] for b in BAD_PATHS], ids=[b[0] for b in BAD_PATHS]
)
def test_episode_log_path_rejects(split: str, rank: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        episode_log_path("/logs", split, rank)


RANKS = [
    ("outside_a_worker", None, 0),
    ("worker_rank", SimpleNamespace(rank=3, group_world_size=4), 3),
]


@pytest.mark.parametrize(("info", "rank"), [r[1:] for r in RANKS], ids=[r[0] for r in RANKS])
def test_worker_rank(info: Any, rank: int) -> None:
    assert worker_rank(info) == rank


@pytest.mark.parametrize(
    "bad",
    [SimpleNamespace(), SimpleNamespace(rank="1"), SimpleNamespace(rank=-2)],
    ids=["no_rank", "str_rank", "negative_rank"],
)
def test_worker_rank_rejects_a_worker_info_without_a_rank(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"worker_info\.rank must be an int >= 0"):
        worker_rank(bad)


def test_two_logs_on_one_path_never_interleave_their_lines(tmp_path: Path) -> None:
    # The envs of one worker's pipeline stages share their worker's file.
    path = str(tmp_path / "sub" / "log.jsonl")
    logs = [EpisodeLog(path), EpisodeLog(path)]
    answer = "x" * 20_000  # longer than a stdio buffer: one write per line still

    def write(log: EpisodeLog, stage: int) -> None:
        for i in range(50):
            log.write({"seed_offset": stage, "i": i, "vlm_answer": answer})

    threads = [threading.Thread(target=write, args=(log, stage)) for stage, log in enumerate(logs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for log in logs:
        log.close()
    lines = [json.loads(line) for line in Path(path).read_text().splitlines()]
    assert sorted((ln["seed_offset"], ln["i"]) for ln in lines) == [(s, i) for s in (0, 1) for i in range(50)]
    assert all(ln["vlm_answer"] == answer for ln in lines)


def test_a_closed_log_refuses_to_write_and_closes_twice(tmp_path: Path) -> None:
    log = EpisodeLog(str(tmp_path / "log.jsonl"))
    log.write({"a": 1})
    log.close()
    log.close()
    with pytest.raises(ValueError, match="is closed"):
        log.write({"a": 2})
    assert (tmp_path / "log.jsonl").read_text() == '{"a": 1}\n'
