"""Request and response models of the reward server's HTTP protocol (DESIGN.md section 7).

The models are strict: a wrong JSON type (``"16"`` for ``nframes``, ``123`` for
``task_text``) and unknown fields are rejected with 422 instead of being coerced or ignored,
because a silently ignored misspelled field (``nframe``) would score with a default the
caller never chose. What a request may cost (frames, pixels, text length, tokens) is capped
by the server's ``--max-*`` flags, checked after parsing (:mod:`vlm_reward.limits`); the
bounds here are the ones that hold for every server.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# Kept in step with vlm_reward.parsing.SCORE_MODES (a test checks they match); a Literal
# makes the valid choices part of the 422 message.
ScoreMode = Literal["auto", "percentage", "unit"]

# Qwen2.5-VL works on 28x28 patches: one patch is the smallest frame it can see.
MIN_PIXELS = 28 * 28
# The fps only labels the clip's timing (no work scales with it); beyond this it is a bug.
MAX_VIDEO_FPS = 240.0
# Linux's PATH_MAX: no longer path can name a file.
MAX_PATH_CHARS = 4096


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
    nframes: int = Field(default=16, ge=1, description="Frames the VLM samples (cap: --max-nframes).")
    max_pixels: int = Field(
        default=200704, ge=MIN_PIXELS, description="Pixels per frame (cap: --max-pixels)."
    )
    backend: str | None = Field(default=None, min_length=1, description="Backend name or alias.")
    backend_kwargs: dict[str, Any] = Field(default_factory=dict, description="Per-request overrides.")
    video_fps: float = Field(default=4.0, gt=0, le=MAX_VIDEO_FPS, description="Frame rate of the video.")
    score_mode: ScoreMode | None = Field(default=None, description="Default: the backend's own mode.")

    @model_validator(mode="after")
    def _check_request(self) -> ScoreRequest:
        # Whitespace-only text passes min_length but gives the judge nothing to judge.
        if not self.task_text.strip():
            raise ValueError("task_text must contain non-whitespace text")
        if (self.video_path is None) == (self.video_b64 is None):
            raise ValueError("give exactly one of video_path or video_b64")
        return self


class ScoreResponse(BaseModel):
    """A score in [0, 1] plus what it was read from, for logging and debugging."""

    score: float
    raw_value: float | None = Field(description="The number in the answer before normalisation.")
    answer: str | None = Field(description="Text of the model's <answer> (or the whole answer).")
    think: str | None = Field(description="Text of the model's <think> block, if any.")
    backend: str = Field(description="Canonical backend name (aliases resolved).")
    model: str = Field(description="Model name (directory name of a local checkpoint).")
    latency_s: float = Field(description="Server-side time for the whole request.")


class ErrorDetail(BaseModel):
    type: str
    message: str


class ErrorResponse(BaseModel):
    """The one error shape; see :mod:`vlm_reward.errors` for statuses and types."""

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
    states: dict[str, str] = Field(description="Backend this server hosts -> loading/ready/failed.")
