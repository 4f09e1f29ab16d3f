"""Tests for vlm_reward.protocol: defaults, bounds and strictness of the models; the error table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from vlm_reward.judging.parsing import parse_score
from vlm_reward.protocol import (
    DEFAULT_ENDPOINT,
    DEFAULT_PORT,
    ERROR_STATUS,
    MAX_PATH_CHARS,
    MAX_VIDEO_FPS,
    SCORE_MODES,
    ScoreRequest,
    ScoreResponse,
)


@pytest.mark.parametrize("mode", SCORE_MODES)
def test_every_text_score_mode_is_one_the_parser_reads_and_probability_is_not(mode: str) -> None:
    if mode == "probability":  # read from the model's distribution, never from text
        with pytest.raises(ValueError, match="score mode must be one of auto, percentage, unit"):
            parse_score("<answer>1</answer>", mode)
    else:
        assert 0.0 <= parse_score("<answer>1</answer>", mode).score <= 1.0


def test_the_error_table_lists_exactly_the_types_the_server_answers_with() -> None:
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException

    from vlm_reward.errors import BackendError, RewardServerError, error_response
    from vlm_reward.judging.probability import NoAnswerMassError

    def subclasses(cls: type) -> list[type]:
        return [cls, *(s for sub in cls.__subclasses__() for s in subclasses(sub))]

    raised = {cls.error_type for cls in subclasses(RewardServerError)}
    mapped = {
        error_response(exc)[1]["error"]["type"]
        for exc in (
            BackendError("b", ValueError("x")),
            BackendError("b", RuntimeError("x")),
            BackendError("b", NoAnswerMassError("x")),
            RequestValidationError([]),
            HTTPException(404),
            HTTPException(405),
            RuntimeError("bug"),
        )
    }
    assert raised | mapped == set(ERROR_STATUS)


@pytest.mark.parametrize(
    ("score", "ok"),
    [(0.0, True), (1.0, True), (0.5, True), (-0.1, False), (1.1, False), (float("nan"), False)],
    ids=["zero", "one", "half", "negative", "above-one", "nan"],
)
def test_a_response_score_must_be_in_the_unit_interval(score: float, ok: bool) -> None:
    body = {"score": score, "raw_value": None, "answer": None, "think": None, "backend": "b", "model": "m"}
    body["latency_s"] = 0.1
    if ok:
        assert ScoreResponse.model_validate(body).score == score
    else:
        with pytest.raises(ValidationError, match="score"):
            ScoreResponse.model_validate(body)


RESPONSE = {"score": 0.5, "raw_value": None, "answer": None, "think": None, "backend": "b", "model": "m"}


@pytest.mark.parametrize(
    ("frame_scores", "ok"),
    [([0.0, 0.5, 1.0], True), ([], True), ([0.2, 1.01], False), ([-0.1], False), (["0.5"], False)],
    ids=["in-range", "empty", "above-one", "negative", "string"],
)
def test_frame_scores_are_each_in_the_unit_interval(frame_scores: list, ok: bool) -> None:
    body = {**RESPONSE, "latency_s": 0.1, "frame_scores": frame_scores}
    if ok:
        assert ScoreResponse.model_validate(body).frame_scores == frame_scores
    else:
        with pytest.raises(ValidationError, match="frame_scores"):
            ScoreResponse.model_validate(body)


@pytest.mark.parametrize(
    ("frame_scores", "keys"),
    [(None, set()), ([0.25, 0.75], {"frame_scores"})],
    ids=["absent-without-per-frame-values", "present-with-them"],
)
def test_frame_scores_are_left_out_of_the_json_when_there_are_none(frame_scores, keys: set) -> None:
    response = ScoreResponse(**RESPONSE, latency_s=0.1, frame_scores=frame_scores)
    written = json.loads(response.model_dump_json())
    assert set(written) - set(ScoreResponse.model_fields) == set()
    assert {"frame_scores"} & set(written) == keys
    assert ScoreResponse.model_validate(written) == response


def test_defaults_follow_the_protocol() -> None:
    req = ScoreRequest.model_validate({"task_text": "open the drawer", "video_path": "a.mp4"})
    assert (req.nframes, req.max_pixels, req.video_fps) == (16, 200704, 4.0)
    assert (req.backend, req.backend_kwargs, req.score_mode, req.video_b64) == (None, {}, None, None)
    assert req.native_frame_size is False  # frames upscaled to the model's floor, as before the setting


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
        ({"native_frame_size": "true"}, "native_frame_size"),
        ({"native_frame_size": 1}, "native_frame_size"),
        ({"extra": 1}, "extra"),
    ],
    ids=["nframes-zero", "nframes-float", "nframes-bool", "fps-zero", "fps-string", "pixels-below-a-patch",
         "fps-over", "path-over-path-max", "task-int", "backend-empty", "mode-case", "native-string",
         "native-int", "unknown-field"],
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


REPO = Path(__file__).resolve().parents[2]
PRODUCT = ("vlm_reward", "reward_eval", "rlinf", "examples", "docgen", "benchmarks", "scripts")


def test_the_default_port_is_written_once_in_the_product_code() -> None:
    """The server's ``--port``, the client's endpoint and the launchers take it from the protocol."""
    literal = re.compile(rf"\b{DEFAULT_PORT}\b")
    found = [
        f"{path.relative_to(REPO)}:{number}"
        for root in PRODUCT
        for path in sorted((REPO / root).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if literal.search(line)
    ]
    assert found == ["vlm_reward/protocol.py:" + _line_of("DEFAULT_PORT = ")], found


def _line_of(prefix: str) -> str:
    lines = (REPO / "vlm_reward" / "protocol.py").read_text(encoding="utf-8").splitlines()
    return str(next(n for n, line in enumerate(lines, 1) if line.startswith(prefix)))


def test_the_server_listens_where_the_client_calls_by_default() -> None:
    from vlm_reward.client.config import RewardModelConfig
    from vlm_reward.server.serving import ServingOptions

    options = ServingOptions()
    assert RewardModelConfig().endpoint == DEFAULT_ENDPOINT == f"http://{options.host}:{options.port}/score"
