"""The success rule and the judge's identity every part shares."""

from __future__ import annotations

import pytest

from vlm_reward.verdict import JUDGE_KEYS, JudgeIdentity, is_success

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


IDENTITIES = [
    (
        "full",
        JudgeIdentity("qwen_vl_hf", "tiny", "probability", "yes_no", "6b101f59a615"),
        "qwen_vl_hf on tiny, score_mode probability, prompt yes_no (6b101f59a615)",
    ),
    ("older_server", JudgeIdentity("qwen_vl_hf", "tiny"), "qwen_vl_hf on tiny"),
]


@pytest.mark.parametrize(("judge", "text"), [i[1:] for i in IDENTITIES], ids=[i[0] for i in IDENTITIES])
def test_a_judge_names_itself_and_its_log_keys(judge: JudgeIdentity, text: str) -> None:
    assert str(judge) == text
    record = judge.to_record()
    assert tuple(record) == JUDGE_KEYS
    assert (record["judge_backend"], record["judge_model"], record["prompt_hash"]) == (
        judge.backend,
        judge.model,
        judge.prompt_hash,
    )
