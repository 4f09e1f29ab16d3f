"""Tests for vlm_reward.errors.error_response: the one place statuses and error types are chosen."""

from __future__ import annotations

import pytest
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from vlm_reward.errors import (
    MAX_MESSAGE_CHARS,
    AnswerParseError,
    BackendError,
    BackendLoadFailedError,
    BackendLoadingError,
    BackendNotLoadedError,
    InvalidRequestError,
    InvalidVideoError,
    PayloadTooLargeError,
    UnknownBackendError,
    VideoNotFoundError,
    VideoOutsideRootError,
    error_response,
    scrub,
)
from vlm_reward.protocol import ScoreRequest


def _validation_error() -> ValidationError:
    try:
        ScoreRequest.model_validate({"task_text": "t", "video_path": "a.mp4", "nframes": 0})
    except ValidationError as exc:
        return exc
    raise AssertionError("nframes=0 should not validate")


@pytest.mark.parametrize(
    ("exc", "status", "error_type"),
    [
        (InvalidRequestError("x"), 400, "invalid_request"),
        (InvalidVideoError("x"), 400, "invalid_video"),
        (VideoNotFoundError("x"), 400, "video_not_found"),
        (VideoOutsideRootError("x"), 403, "video_outside_root"),
        (UnknownBackendError("x"), 404, "unknown_backend"),
        (PayloadTooLargeError("x"), 413, "payload_too_large"),
        (_validation_error(), 422, "validation_error"),
        (
            RequestValidationError([{"loc": ("body", "task_text"), "msg": "Field required"}]),
            422,
            "validation_error",
        ),
        (AnswerParseError("x"), 502, "parse_error"),
        (BackendNotLoadedError("x"), 503, "backend_not_loaded"),
        (BackendLoadingError("x"), 503, "backend_loading"),
        (BackendLoadFailedError("x"), 503, "backend_load_failed"),
        (BackendError("b", ValueError("bad kwarg")), 400, "invalid_request"),
        (BackendError("b", TypeError("bad type")), 400, "invalid_request"),
        (BackendError("b", RuntimeError("boom")), 500, "inference_error"),
        (HTTPException(404), 404, "not_found"),
        (HTTPException(405), 405, "method_not_allowed"),
        (KeyError("/home/user/secret"), 500, "internal_error"),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else str(v),
)
def test_every_exception_maps_to_its_documented_status(
    exc: BaseException, status: int, error_type: str
) -> None:
    got_status, body = error_response(exc)
    assert (got_status, body["error"]["type"]) == (status, error_type)
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}
    assert body["error"]["message"]


def test_validation_message_names_the_field_but_not_the_input() -> None:
    huge = "Q" * 10_000
    try:
        ScoreRequest.model_validate({"task_text": "t", "video_b64": huge, "nframes": "16"})
    except ValidationError as exc:
        message = error_response(exc)[1]["error"]["message"]
    assert "nframes: Input should be a valid integer" in message
    assert huge[:100] not in message


def test_unknown_exception_reveals_nothing() -> None:
    message = error_response(KeyError("/home/user/secret"))[1]["error"]["message"]
    assert "secret" not in message and "KeyError" not in message


def test_backend_failure_message_names_backend_and_cause_without_paths() -> None:
    exc = BackendError("qwen", RuntimeError("CUDA OOM while reading /data/run/ep_1.mp4"))
    message = error_response(exc)[1]["error"]["message"]
    assert message == "inference failed in backend 'qwen': RuntimeError: CUDA OOM while reading <path>"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("file /home/me/x.mp4 missing", "file <path> missing"),
        ("open('/tmp/a/b')", "open('<path>')"),
        ("ratio 3/4 and url http://host/a/b", "ratio 3/4 and url http://host/a/b"),
        ("no paths here", "no paths here"),
    ],
    ids=["plain-path", "quoted-path", "not-paths", "nothing"],
)
def test_scrub_replaces_absolute_paths_only(text: str, expected: str) -> None:
    assert scrub(text) == expected


def test_scrub_truncates_long_messages() -> None:
    out = scrub("a" * (MAX_MESSAGE_CHARS + 500))
    assert len(out) < MAX_MESSAGE_CHARS + 50 and out.endswith("(truncated)")
