"""docgen.episode_log: the episode-log page's key table is rendered from EpisodeRecord's fields."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from docgen import hooks
from docgen.commands import REPO
from docgen.episode_log import attribute_docs, episode_log_keys
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.episode_record import EpisodeRecord
from vlm_reward.client.scoring import ScoreResult
from vlm_reward.verdict import JudgeIdentity

_KEY = re.compile(r"^\| `([a-z_]+)` \|", re.MULTILINE)


def _table_keys() -> list[str]:
    return _KEY.findall(hooks.render("episode-log-keys"))


def _canary_line() -> dict:
    """A line as the env writes it for a canary: every key it can have, the judge's included."""
    judge = JudgeIdentity("qwen_vl_hf", "tiny", "probability", "yes_no", "6b101f59a615")
    result = ScoreResult(
        0.7, 0.7, "yes", 0.25, False, video_path="/tmp/v.mp4", num_frames_sent=16, endpoint="e", judge=judge
    )
    meta = {
        "split": "train",
        "rank": 0,
        "seed_offset": 0,
        "env": 1,
        "episode": 3,
        "task_id": 2,
        "task_text": "put the bowl on the plate",
        "trial_id": 4,
        "reset_state_id": 104,
        "episode_length": 8,
        "canary": "reversed",
    }
    return EpisodeRecord.judged(meta, result, False, RewardModelConfig(), used_for_training=False).to_json()


def test_every_key_a_real_line_writes_is_in_the_table() -> None:
    line = _canary_line()
    assert {"judge_backend", "prompt_hash", "canary"} <= set(line)  # the keys the page used to lack
    assert sorted(set(line) - set(_table_keys())) == []


def test_the_table_lists_every_field_once_in_the_order_a_line_writes_them() -> None:
    keys = _table_keys()
    assert len(keys) == len(set(keys))
    assert set(keys) == set(EpisodeRecord.__dataclass_fields__) - {"extra"}
    assert [key for key in _canary_line() if key in keys] == [key for key in keys if key in _canary_line()]


@dataclass(frozen=True)
class _Line:
    a: int
    """First."""
    b: str = "x"  # a comment is not a docstring
    c: float = 0.0
    """Third,
    on two lines."""


def test_attribute_docs_are_the_strings_under_the_fields() -> None:
    assert attribute_docs(_Line) == {"a": "First.", "c": "Third,\non two lines."}


def test_a_key_without_a_docstring_fails_the_build() -> None:
    with pytest.raises(ValueError, match=r"_Line: no field with a docstring for the keys \['b', 'd'\]"):
        episode_log_keys(_Line, ("a", "b", "d"), ())


def test_the_table_marks_the_required_keys() -> None:
    rows = episode_log_keys(_Line, ("a", "c"), ("a",)).splitlines()
    assert rows[2:] == ["| `a` | `int` | yes | First. |", "| `c` | `float` |  | Third, on two lines. |"]


def test_the_page_asks_for_the_table() -> None:
    page = (REPO / "docs" / "env" / "episode-log.md").read_text()
    assert "<!-- docgen: episode-log-keys -->" in page.splitlines()
