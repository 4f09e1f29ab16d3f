"""The episode record: round trip, lines of the earlier writer, bad lines, the success rule, the file."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from vlm_reward.client.episode_record import (
    JUDGEMENT_KEYS,
    EpisodeLogWriter,
    EpisodeRecord,
    JudgeIdentity,
    episode_log_path,
    is_success,
    read_episode_log,
    write_episode_log,
)

# A line exactly as the env wrote it before the record was typed (episode_scoring.episode_record).
ENV_LINE = (
    '{"split": "train", "rank": 0, "seed_offset": 1, "env": 1, "episode": 0, "task_id": 3, '
    '"task_text": "put the bowl on the plate", "trial_id": 4, "reset_state_id": 154, '
    '"episode_length": 24, "native_success": false, "vlm_score": 0.7, "vlm_success": true, '
    '"vlm_raw_value": 0.7, "vlm_answer": "yes", "fallback": false, "error": null, "error_kind": null, '
    '"latency_s": 0.1234, "frames_sent": 16, "video_path": null, "endpoint": "http://127.0.0.1:1/score", '
    '"failovers": 0, "used_for_training": true, "binary_reward": true, "success_threshold": 0.5}'
)
# Older and hand-made lines: fewer keys, keys this model does not know, 0/1 for a bool.
OLD_LINES = [
    (
        "before_replicas",
        {k: v for k, v in json.loads(ENV_LINE).items() if k not in ("endpoint", "failovers")},
    ),
    ("minimal", {"task_id": 0, "native_success": True, "vlm_score": 1}),
    ("unknown_key_kept", {"task_id": "10", "native_success": 1, "vlm_score": 0.2, "note": "by hand"}),
]


JUDGE = JudgeIdentity("qwen_vl_hf", "tiny-qwen", "probability", "yes_no", "6b101f59a615")


def _result(score: float = 0.8, fallback: bool = False) -> SimpleNamespace:
    return SimpleNamespace(
        score=score, raw_value=score, answer="yes", latency_s=0.123456, fallback=fallback, error=None,
        error_kind=None, video_path="/v.mp4", num_frames_sent=16, endpoint="http://e/score", failovers=1,
        judge=None if fallback else JUDGE,
    )  # fmt: skip


SETTINGS = SimpleNamespace(success_threshold=0.5, binary_reward=True, use_for_training=False)


def test_a_line_of_the_env_reads_and_writes_back_unchanged() -> None:
    record = EpisodeRecord.from_json(json.loads(ENV_LINE))
    assert (record.task_id, record.native_success, record.vlm_score, record.vlm_success) == (
        3,
        False,
        0.7,
        True,
    )
    assert json.dumps(record.to_json()) == ENV_LINE


@pytest.mark.parametrize("line", [o[1] for o in OLD_LINES], ids=[o[0] for o in OLD_LINES])
def test_old_lines_read_and_round_trip(line: dict[str, Any]) -> None:
    record = EpisodeRecord.from_json(line)
    assert record.native_success is bool(line["native_success"]) and record.vlm_score == line["vlm_score"]
    written = record.to_json()
    assert set(JUDGEMENT_KEYS) <= set(written)  # every judgement key is written, null when absent
    assert EpisodeRecord.from_json(written) == record
    assert {k: v for k, v in written.items() if k in line} == {
        **line,
        "native_success": bool(line["native_success"]),
    }


def test_unknown_keys_are_kept_as_extra() -> None:
    record = EpisodeRecord.from_json({"task_id": 1, "native_success": False, "vlm_score": 0.0, "note": "x"})
    assert record.extra == {"note": "x"} and record.to_json()["note"] == "x"


def test_judged_builds_the_line_the_env_writes() -> None:
    meta = {"task_id": 2, "task_text": "t", "trial_id": 5}
    record = EpisodeRecord.judged(meta, _result(0.5), True, SETTINGS)
    assert record.to_json() == {
        **meta, "native_success": True, "vlm_score": 0.5, "vlm_success": True, "vlm_raw_value": 0.5,
        "vlm_answer": "yes", "fallback": False, "error": None, "error_kind": None, "latency_s": 0.1235,
        "frames_sent": 16, "video_path": "/v.mp4", "endpoint": "http://e/score", "failovers": 1,
        "used_for_training": False, "binary_reward": True, "success_threshold": 0.5,
        "judge_backend": "qwen_vl_hf", "judge_model": "tiny-qwen", "score_mode": "probability",
        "prompt_preset": "yes_no", "prompt_hash": "6b101f59a615",
    }  # fmt: skip
    assert record.meta == meta
    assert record.judge == JUDGE
    assert (
        str(record.judge) == "qwen_vl_hf on tiny-qwen, score_mode probability, prompt yes_no (6b101f59a615)"
    )


def test_a_fallback_and_an_older_line_name_no_judge() -> None:
    fallback = EpisodeRecord.judged({"task_id": 0}, _result(0.0, fallback=True), False, SETTINGS)
    assert fallback.judge is None and "judge_backend" not in fallback.to_json()
    assert EpisodeRecord.from_json(json.loads(ENV_LINE)).judge is None


def test_at_threshold_recomputes_only_the_verdict() -> None:
    record = EpisodeRecord.judged({"task_id": 0}, _result(0.6), False, SETTINGS)
    moved = record.at_threshold(0.7, binary_reward=False)
    assert (moved.vlm_success, moved.success_threshold, moved.binary_reward) == (False, 0.7, False)
    assert moved.vlm_score == 0.6 and record.at_threshold(0.7).binary_reward is True


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
    path.write_text(ENV_LINE + "\n" + text + "\n")
    with pytest.raises(ValueError, match=message) as info:
        read_episode_log(path)
    assert str(path) in str(info.value)


def test_write_then_read_skips_blank_lines(tmp_path: Path) -> None:
    records = [EpisodeRecord.judged({"task_id": i}, _result(0.1 * i), i % 2 == 0, SETTINGS) for i in range(3)]
    path = tmp_path / "log.jsonl"
    write_episode_log(path, records)
    path.write_text(path.read_text() + "\n  \n")
    assert read_episode_log(path) == records


def test_canary_lines_are_read_apart_from_the_episodes(tmp_path: Path) -> None:
    episode = EpisodeRecord.judged({"task_id": 1, "env": 0}, _result(0.9), True, SETTINGS)
    canary_meta = {"task_id": 1, "env": 0, "canary": "reversed"}
    canary = EpisodeRecord.judged(canary_meta, _result(0.9), False, SETTINGS, used_for_training=False)
    path = tmp_path / "vlm_episodes_train_rank0.jsonl"
    write_episode_log(path, [episode, canary, episode])
    assert read_episode_log(path) == [episode, episode], "reports and tools read the episodes as before"
    assert read_episode_log(path, canaries=True) == [canary]
    line = json.loads(path.read_text().splitlines()[1])
    assert (line["canary"], line["native_success"], line["used_for_training"]) == ("reversed", False, False)
    assert canary.is_canary and not episode.is_canary and "canary" not in episode.to_json()


SUCCESS = [
    ("below", 0.49, 0.5, False),
    ("at_the_threshold", 0.5, 0.5, True),
    ("above", 0.51, 0.5, True),
    ("zero_threshold", 0.0, 0.0, True),
    ("one_needs_one", 0.99, 1.0, False),
]


@pytest.mark.parametrize(
    ("score", "threshold", "success"), [s[1:] for s in SUCCESS], ids=[s[0] for s in SUCCESS]
)
def test_is_success(score: float, threshold: float, success: bool) -> None:
    assert is_success(score, threshold) is success


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
            meta = {"seed_offset": stage, "episode": i, "task_id": 0}
            log.write(
                EpisodeRecord.judged(
                    meta, SimpleNamespace(**{**vars(_result()), "answer": answer}), False, SETTINGS
                )
            )

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
    path.write_text(ENV_LINE + "\n")
    script = (
        "import sys; sys.modules['rlinf'] = None\n"  # any import of rlinf now raises ImportError
        "from vlm_reward.client.episode_record import read_episode_log, write_episode_log\n"
        f"records = read_episode_log({str(path)!r})\n"
        f"write_episode_log({str(tmp_path / 'copy.jsonl')!r}, records)\n"
        "assert not [n for n, m in sys.modules.items() if m and n.split('.')[0] == 'rlinf']\n"
    )
    repo = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=repo, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "copy.jsonl").read_text() == ENV_LINE + "\n"
