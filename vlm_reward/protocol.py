"""The reward server's wire protocol, defined once: the server serves it, the env's client speaks it.

- ``POST /score``: :class:`ScoreRequest` in, :class:`ScoreResponse` out.
- ``GET /health``: :class:`HealthResponse` (200 once the backend serves, an error before).
- ``GET /backends``: :class:`BackendsResponse`.
- Every error: :class:`ErrorResponse`, ``{"error": {"type", "message"}}``, with the status
  :data:`ERROR_STATUS` gives its type; :data:`RETRYABLE_STATUSES` are the ones a client may
  retry (elsewhere or later).
- :data:`SCORE_MODES`: how an answer is read as a score.
- Keys: :data:`API_KEY_ENV` is the variable a server reads its keys from (and the name a client's
  ``reward_model.api_key_env`` usually gives); requests carry :func:`authorization` 's header.

The models are strict: a wrong JSON type (``"16"`` for ``nframes``, ``123`` for
``task_text``) and unknown fields are rejected with 422 instead of being coerced or ignored,
because a silently ignored misspelled field (``nframe``) would score with a default the
caller never chose. What a request may cost (frames, pixels, text length, tokens) is capped
by each server's ``--max-*`` flags (:mod:`vlm_reward.server.limits`); the bounds here hold for every
server. Only pydantic is imported, so the env's client needs nothing of the server's stack.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ScoreMode = Literal["auto", "percentage", "unit", "rubric", "probability"]
# How a backend's answer becomes a score: the text modes read a number or a verdict word out
# of the answer (vlm_reward.judging.parsing; "rubric" reads "ANSWER: n", n in 1..5, as (n - 1) / 4);
# "probability" never reads text, the score is the expected value of the preset's answer
# scale at the first answer position, P(yes) / (P(yes) + P(no)) for yes/no (vlm_reward.judging.probability).
SCORE_MODES: tuple[str, ...] = typing.get_args(ScoreMode)
TEXT_SCORE_MODES: tuple[str, ...] = tuple(mode for mode in SCORE_MODES if mode != "probability")

# The request defaults, which are also the env's reward_model defaults: 16 frames of at most
# 256 Qwen2.5-VL patches (256 * 28 * 28 pixels) each, at the 4 fps the client encodes.
DEFAULT_NFRAMES = 16
DEFAULT_MAX_PIXELS = 200704
DEFAULT_VIDEO_FPS = 4.0
# Qwen2.5-VL works on 28x28 patches: one patch is the smallest frame it can see.
MIN_PIXELS = 28 * 28
# The fps only labels the clip's timing (no work scales with it); beyond this it is a bug.
MAX_VIDEO_FPS = 240.0
# Linux's PATH_MAX: no longer path can name a file.
MAX_PATH_CHARS = 4096

# Where a reward server listens unless told otherwise (``--host``/``--port``), and so the URL the
# env's client calls by default (``reward_model.endpoint``): the server's flags, the client's
# default and the shell launcher all take it from here.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 18080
DEFAULT_ENDPOINT = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}/score"

# API keys: the environment variable a server reads its keys from (comma-separated), and the
# header scheme that carries one (``Authorization: Bearer <key>``). Client and server import both.
API_KEY_ENV = "VLM_REWARD_API_KEY"
AUTH_SCHEME = "Bearer"


def authorization(key: str) -> str:
    """The ``Authorization`` header value that carries ``key``."""
    return f"{AUTH_SCHEME} {key}"


# Every error type the server answers with, and its HTTP status (vlm_reward.errors says when).
ERROR_STATUS: dict[str, int] = {
    "invalid_request": 400,
    "invalid_video": 400,
    "video_not_found": 400,
    "unauthorized": 401,
    "video_outside_root": 403,
    "unknown_backend": 404,
    "not_found": 404,
    "method_not_allowed": 405,
    "request_timeout": 408,
    "payload_too_large": 413,
    "validation_error": 422,
    "limit_exceeded": 422,
    "client_disconnected": 499,
    "inference_error": 500,
    "internal_error": 500,
    "parse_error": 502,
    "no_answer_mass": 502,
    "backend_not_loaded": 503,
    "backend_loading": 503,
    "backend_load_failed": 503,
    "self_testing": 503,
    "self_test_failed": 503,
    "shutting_down": 503,
    "server_busy": 503,
}
# Worth retrying, on another server or a little later: 503 (this server cannot serve the
# backend now: loading, stopping, or not hosting it) and 504 (a proxy's timeout). Not 502:
# an unreadable answer is the model's, and the same request gets the same answer again.
RETRYABLE_STATUSES = frozenset({503, 504})


class ScoreRequest(BaseModel):
    """``POST /score``: judge one episode video against its task description."""

    model_config = ConfigDict(strict=True, extra="forbid")

    task_text: str = Field(min_length=1, description="Task instruction.")
    video_path: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_PATH_CHARS,
        description="MP4 on the server's disk, inside its --video-root.",
    )
    video_b64: str | None = Field(default=None, min_length=1, description="Base64-encoded MP4 bytes.")
    nframes: int = Field(
        default=DEFAULT_NFRAMES, ge=1, description="Frames the VLM samples (cap: --max-nframes)."
    )
    max_pixels: int = Field(
        default=DEFAULT_MAX_PIXELS, ge=MIN_PIXELS, description="Pixels per frame (cap: --max-pixels)."
    )
    backend: str | None = Field(default=None, min_length=1, description="Backend name or alias.")
    backend_kwargs: dict[str, Any] = Field(default_factory=dict, description="Per-request overrides.")
    video_fps: float = Field(
        default=DEFAULT_VIDEO_FPS, gt=0, le=MAX_VIDEO_FPS, description="Frame rate of the video."
    )
    native_frame_size: bool = Field(
        default=False,
        description="Frames at their own size, rounded to whole visual tokens, without the upscale "
        "to the model's video pixel floor (max_pixels still caps them).",
    )
    score_mode: ScoreMode | None = Field(default=None, description="Default: the backend's own mode.")

    @model_validator(mode="after")
    def _check_request(self) -> ScoreRequest:
        # Whitespace-only text passes min_length but gives the judge nothing to judge.
        if not self.task_text.strip():
            raise ValueError("task_text must contain non-whitespace text")
        if (self.video_path is None) == (self.video_b64 is None):
            raise ValueError("give exactly one of video_path or video_b64")
        return self


# One frame's score in [0, 1] (a judge that scores frames one by one: ``frame_scores``).
FrameScore = Annotated[float, Field(ge=0.0, le=1.0)]


class ScoreResponse(BaseModel):
    """A score in [0, 1] plus what it was read from, for logging and debugging.

    ``frame_scores`` is left out of the JSON (not ``null``) when the judge has no per-frame values
    (every VLM backend), so their answers are what they were before the field.
    """

    model_config = ConfigDict(strict=True, allow_inf_nan=False)

    score: float = Field(ge=0.0, le=1.0, description="The judgement, in [0, 1].")
    raw_value: float | None = Field(description="The number in the answer before normalisation.")
    answer: str | None = Field(description="Text of the model's <answer> (or the whole answer).")
    think: str | None = Field(description="Text of the model's <think> block, if any.")
    probability: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="score_mode probability: the expected score of the answer scale (yes/no: P(yes)).",
    )
    backend: str = Field(description="Canonical backend name (aliases resolved).")
    model: str = Field(description="Model name (directory name of a local checkpoint).")
    latency_s: float = Field(description="Server-side time for the whole request.")
    # Who judged, beyond backend and model (None from servers older than these fields).
    score_mode: ScoreMode | None = Field(default=None, description="How the answer was read as the score.")
    prompt_preset: str | None = Field(
        default=None, description="Prompt preset the question started from; None: the backend asks none."
    )
    prompt_hash: str | None = Field(
        default=None, description="Fingerprint of the prompt as asked (12 hex digits of its SHA-256)."
    )
    frame_scores: list[FrameScore] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="One score in [0, 1] per frame the judge scored, in the video's order (a frame "
        "classifier: every frame it was shown); absent from judges without per-frame values.",
    )


class ErrorDetail(BaseModel):
    type: str
    message: str


class ErrorResponse(BaseModel):
    """The one error shape; :data:`ERROR_STATUS` has each type's status."""

    error: ErrorDetail


class HealthResponse(BaseModel):
    """``GET /health`` with 200: the default backend is loaded and serving."""

    status: Literal["ok"] = "ok"
    backend: str
    model: str
    max_batch_size: int
    limits: dict[str, int | float] = Field(description="The server's per-request caps (--max-* flags).")


class BackendsResponse(BaseModel):
    """``GET /backends``: what can be asked for, and what this server actually serves."""

    default: str
    backends: list[str] = Field(description="Registered canonical names.")
    aliases: dict[str, list[str]] = Field(description="Canonical name -> its aliases.")
    loaded: list[str] = Field(description="Backends loaded and ready in this server.")
    states: dict[str, str] = Field(
        description="Backend this server hosts -> loading/self_testing/ready/failed/self_test_failed."
    )
