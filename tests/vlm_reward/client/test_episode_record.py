"""The episode record: round trip, lines of the earlier writer, a judgement's line, another threshold."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from vlm_reward.client.episode_record import JUDGEMENT_KEYS, EpisodeRecord
from vlm_reward.verdict import JudgeIdentity

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
        judge=None if fallback else JUDGE, frame_scores=None,
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


def test_a_frame_classifier_s_scores_are_written_last_and_not_copied_to_a_rejudged_line() -> None:
    result = SimpleNamespace(**{**vars(_result(0.5)), "frame_scores": (0.1, 0.2, 0.5)})
    record = EpisodeRecord.judged({"task_id": 2}, result, True, SETTINGS)
    written = record.to_json()
    assert list(written)[-1] == "frame_scores" and written["frame_scores"] == [0.1, 0.2, 0.5]
    assert EpisodeRecord.from_json(json.loads(json.dumps(written))) == record
    assert "frame_scores" not in record.meta  # a judge of its own writes its own, or none
    assert "frame_scores" not in EpisodeRecord.judged({"task_id": 2}, _result(0.5), True, SETTINGS).to_json()


@pytest.mark.parametrize(
    "frame_scores", [[0.1, 1.2], [0.1, None], "0.5", [True]], ids=["above-one", "null", "string", "bool"]
)
def test_bad_frame_scores_raise_naming_the_key(frame_scores) -> None:
    line = {"task_id": 0, "native_success": True, "vlm_score": 0.5, "frame_scores": frame_scores}
    with pytest.raises(ValueError, match="line 3: frame_scores must be a list of numbers in"):
        EpisodeRecord.from_json(line, "line 3")


def test_a_fallback_and_an_older_line_name_no_judge() -> None:
    fallback = EpisodeRecord.judged({"task_id": 0}, _result(0.0, fallback=True), False, SETTINGS)
    assert fallback.judge is None and "judge_backend" not in fallback.to_json()
    assert EpisodeRecord.from_json(json.loads(ENV_LINE)).judge is None


def test_at_threshold_recomputes_only_the_verdict() -> None:
    record = EpisodeRecord.judged({"task_id": 0}, _result(0.6), False, SETTINGS)
    moved = record.at_threshold(0.7, binary_reward=False)
    assert (moved.vlm_success, moved.success_threshold, moved.binary_reward) == (False, 0.7, False)
    assert moved.vlm_score == 0.6 and record.at_threshold(0.7).binary_reward is True
