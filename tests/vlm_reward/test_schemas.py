"""Tests for vlm_reward.schemas: defaults, bounds and strictness of the /score request."""

from __future__ import annotations

import typing

import pytest
from pydantic import ValidationError

from vlm_reward.parsing import SCORE_MODES
from vlm_reward.schemas import MAX_PATH_CHARS, MAX_VIDEO_FPS, ScoreMode, ScoreRequest


def test_score_modes_match_the_parser() -> None:
    assert typing.get_args(ScoreMode) == SCORE_MODES


def test_defaults_follow_the_protocol() -> None:
    req = ScoreRequest.model_validate({"task_text": "open the drawer", "video_path": "a.mp4"})
    assert (req.nframes, req.max_pixels, req.video_fps) == (16, 200704, 4.0)
    assert (req.backend, req.backend_kwargs, req.score_mode, req.video_b64) == (None, {}, None, None)


@pytest.mark.parametrize(
    ("fields", "loc"),
    [
        ({"nframes": 0}, "nframes"),
        ({"nframes": 16.0}, "nframes"),
        ({"nframes": True}, "nframes"),
        ({"video_fps": 0}, "video_fps"),
        ({"video_fps": "4"}, "video_fps"),
        ({"max_pixels": 10}, "max_pixels"),
        ({"video_fps": MAX_VIDEO_FPS + 1}, "video_fps"),
        ({"video_path": "v" * (MAX_PATH_CHARS + 1)}, "video_path"),
        ({"task_text": 5}, "task_text"),
        ({"backend": ""}, "backend"),
        ({"score_mode": "Percentage"}, "score_mode"),
        ({"extra": 1}, "extra"),
    ],
    ids=["nframes-zero", "nframes-float", "nframes-bool", "fps-zero", "fps-string", "pixels-below-a-patch",
         "fps-over", "path-over-path-max", "task-int", "backend-empty", "mode-case", "unknown-field"],
)  # fmt: skip
def test_out_of_range_or_wrongly_typed_fields_are_rejected(fields: dict[str, object], loc: str) -> None:
    with pytest.raises(ValidationError) as info:
        ScoreRequest.model_validate({"task_text": "t", "video_path": "a.mp4", **fields})
    assert [err["loc"][0] for err in info.value.errors()] == [loc]


def test_integer_fps_is_accepted_as_float() -> None:
    assert (
        ScoreRequest.model_validate({"task_text": "t", "video_path": "a.mp4", "video_fps": 10}).video_fps
        == 10.0
    )
