"""Unit tests for vlm_reward.server.limits: which request is over which cap, and what the message says."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from vlm_reward.errors import LimitExceededError
from vlm_reward.server.limits import RequestLimits, flag_name

LIMITS = RequestLimits(
    max_new_tokens=100,
    max_nframes=16,
    max_pixels=50_000,
    max_video_pixels=400_000,
    max_prompt_chars=20,
    max_video_frames=32,
    max_video_mb=1.0,
)
OK = {"nframes": 16, "max_pixels": 25_000, "task_text": "t" * 20, "backend_kwargs": {"stop": ["s" * 20]}}


def test_a_request_at_every_cap_passes() -> None:
    LIMITS.check_request(**OK)
    LIMITS.check_token_budget(100)
    LIMITS.check_token_budget(None)  # a backend that cannot tell
    LIMITS.check_video_frames(32)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"nframes": 17}, "nframes is 17, above this server's limit of 16 (--max-nframes)"),
        ({"max_pixels": 50_001}, "max_pixels is 50001, above this server's limit of 50000 (--max-pixels)"),
        (
            {"nframes": 16, "max_pixels": 25_001},
            "nframes * max_pixels is 400016, above this server's limit of 400000 (--max-video-pixels)",
        ),
        ({"task_text": "t" * 21}, "task_text length is 21 chars, above this server's limit of 20 chars"),
        (
            {"backend_kwargs": {"system_prompt": "p" * 21}},
            "backend_kwargs['system_prompt'] length is 21 chars",
        ),
        ({"backend_kwargs": {"stop": ["ok", "s" * 21]}}, "backend_kwargs['stop'][1] length is 21 chars"),
        ({"backend_kwargs": {"k" * 21: 1}}, "backend_kwargs key length is 21 chars"),
        (
            {"backend_kwargs": {"nested": {"deep": ["x" * 21]}}},
            "backend_kwargs['nested']['deep'][0] length is 21 chars, above this server's limit of 20 chars "
            "(--max-prompt-chars)",
        ),
    ],
    ids=[
        "nframes",
        "max-pixels",
        "frames-times-pixels",
        "task-text",
        "prompt-override",
        "stop-string",
        "kwargs-key",
        "nested-string",
    ],
)
def test_each_field_over_its_cap_is_refused_naming_the_flag(change: dict[str, Any], message: str) -> None:
    with pytest.raises(LimitExceededError, match="limit") as info:
        LIMITS.check_request(**{**OK, **change})
    assert message in info.value.message
    assert info.value.status == 422 and info.value.error_type == "limit_exceeded"


@pytest.mark.parametrize(
    ("check", "message"),
    [
        (lambda: LIMITS.check_token_budget(10**9), "is 1000000000 tokens, above this server's limit of 100"),
        (lambda: LIMITS.check_video_frames(33), "frame count is 33, above this server's limit of 32"),
    ],
    ids=["token-budget", "video-frames"],
)
def test_budget_and_frame_count_caps(check: Any, message: str) -> None:
    with pytest.raises(LimitExceededError) as info:
        check()
    assert message in info.value.message


def test_the_message_says_how_to_get_more() -> None:
    with pytest.raises(LimitExceededError) as info:
        LIMITS.check_token_budget(101, where="the default generation budget of backend 'x'")
    assert info.value.message == (
        "the default generation budget of backend 'x' is 101 tokens, above this server's limit of "
        "100 tokens (--max-new-tokens); ask for less, or start the server with a larger --max-new-tokens."
    )


@pytest.mark.parametrize(
    "value", [0, -1, True, float("nan"), "8"], ids=["zero", "negative", "bool", "nan", "str"]
)
def test_caps_must_be_positive_numbers(value: object) -> None:
    with pytest.raises(ValueError, match="--max-nframes must be a positive number"):
        RequestLimits(max_nframes=value)  # type: ignore[arg-type]


def test_defaults_fit_the_env_default_request_and_primo_r1() -> None:
    """The env sends 16 frames of 200704 px; PRIMO-R1 reasons for up to 4096 tokens."""
    limits = RequestLimits()
    limits.check_request(
        nframes=16, max_pixels=200704, task_text="put both items in the basket", backend_kwargs={}
    )
    limits.check_token_budget(4096)
    assert limits.max_video_pixels == 64 * 200704
    assert flag_name("max_video_pixels") == "max-video-pixels"


def test_the_docs_table_of_caps_lists_every_cap_and_its_default() -> None:
    page = (Path(__file__).resolve().parents[3] / "docs" / "server" / "limits.md").read_text()
    for f in dataclasses.fields(RequestLimits):
        default = str(f.default) if isinstance(f.default, int) else f"{f.default:g}"
        assert f"`--{flag_name(f.name)}` ({default}" in page, f.name
