"""The episode log file: its name, append-only writers that never interleave, readers that name a bad line."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from vlm_reward.client.episode_log import (
    EpisodeLogWriter,
    episode_log_path,
    read_episode_log,
    write_episode_log,
)
from vlm_reward.client.episode_record import EpisodeRecord

# A line as the writer writes it (every judgement key, unset ones as null).
LINE = json.dumps(
    EpisodeRecord.from_json({"task_id": 3, "native_success": True, "vlm_score": 0.75}).to_json()
)


def _record(index: int, **keys: Any) -> EpisodeRecord:
    return EpisodeRecord.from_json(
        {"task_id": index, "native_success": index % 2 == 0, "vlm_score": 0.1 * index, **keys}
    )


BAD_LINES = [
    ("not_json", '{"task_id": 0, ', "line 2: not valid JSON"),
    ("not_an_object", "[1, 2]", "line 2: expected a JSON object, got list"),
    ("missing_key", '{"task_id": 0, "vlm_score": 0.5}', r"line 2 lacks \['native_success'\]"),
    (
        "score_out_of_range",
        '{"task_id": 0, "native_success": true, "vlm_score": 1.5}',
        "line 2: vlm_score must be",
    ),
    ("score_nan", '{"task_id": 0, "native_success": true, "vlm_score": NaN}', "line 2: vlm_score must be"),
    (
        "native_not_bool",
        '{"task_id": 0, "native_success": "yes", "vlm_score": 0.5}',
        "line 2: native_success must",
    ),
]


@pytest.mark.parametrize(("text", "message"), [b[1:] for b in BAD_LINES], ids=[b[0] for b in BAD_LINES])
def test_a_bad_line_raises_naming_the_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "vlm_episodes_train_rank0.jsonl"
    path.write_text(LINE + "\n" + text + "\n")
    with pytest.raises(ValueError, match=message) as info:
        read_episode_log(path)
    assert str(path) in str(info.value)


def test_write_then_read_skips_blank_lines(tmp_path: Path) -> None:
    records = [_record(i) for i in range(3)]
    path = tmp_path / "log.jsonl"
    write_episode_log(path, records)
    path.write_text(path.read_text() + "\n  \n")
    assert read_episode_log(path) == records


def test_canary_lines_are_read_apart_from_the_episodes(tmp_path: Path) -> None:
    episode = _record(2, env=0, used_for_training=True)
    canary = _record(1, env=0, canary="reversed", used_for_training=False)
    path = tmp_path / "vlm_episodes_train_rank0.jsonl"
    write_episode_log(path, [episode, canary, episode])
    assert read_episode_log(path) == [episode, episode], "reports and tools read the episodes as before"
    assert read_episode_log(path, canaries=True) == [canary]
    line = json.loads(path.read_text().splitlines()[1])
    assert (line["canary"], line["native_success"], line["used_for_training"]) == ("reversed", False, False)
    assert canary.is_canary and not episode.is_canary and "canary" not in episode.to_json()


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


def test_two_writers_on_one_path_never_interleave_their_lines(tmp_path: Path) -> None:
    # The envs of one worker's pipeline stages share their worker's file.
    path = str(tmp_path / "sub" / "log.jsonl")
    logs = [EpisodeLogWriter(path), EpisodeLogWriter(path)]
    answer = "x" * 20_000  # longer than a stdio buffer: one write per line still

    def write(log: EpisodeLogWriter, stage: int) -> None:
        for i in range(50):
            log.write(_record(0, seed_offset=stage, episode=i, vlm_answer=answer))

    threads = [threading.Thread(target=write, args=(log, stage)) for stage, log in enumerate(logs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for log in logs:
        log.close()
    lines = read_episode_log(path)
    assert sorted((ln.seed_offset, ln.episode) for ln in lines) == [(s, i) for s in (0, 1) for i in range(50)]
    assert all(ln.vlm_answer == answer for ln in lines)


def test_a_closed_writer_refuses_to_write_and_closes_twice(tmp_path: Path) -> None:
    record = EpisodeRecord.from_json({"task_id": 0, "native_success": False, "vlm_score": 0.0})
    log = EpisodeLogWriter(str(tmp_path / "log.jsonl"))
    log.write(record)
    log.close()
    log.close()
    with pytest.raises(ValueError, match="is closed"):
        log.write(record)
    assert read_episode_log(tmp_path / "log.jsonl") == [record]


def test_reading_and_writing_a_log_needs_no_rlinf(tmp_path: Path) -> None:
    """The tools that read logs (rescore, report, metrics) must work with only vlm_reward installed."""
    path = tmp_path / "log.jsonl"
    path.write_text(LINE + "\n")
    script = (
        "import sys; sys.modules['rlinf'] = None\n"  # any import of rlinf now raises ImportError
        "from vlm_reward.client.episode_log import read_episode_log, write_episode_log\n"
        f"records = read_episode_log({str(path)!r})\n"
        f"write_episode_log({str(tmp_path / 'copy.jsonl')!r}, records)\n"
        "assert not [n for n, m in sys.modules.items() if m and n.split('.')[0] == 'rlinf']\n"
    )
    repo = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=repo, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "copy.jsonl").read_text() == LINE + "\n"
