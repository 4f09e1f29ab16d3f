"""The ``reward_model`` block of the LIBERO env YAML, validated when the env is built.

A typed model: every key of the block is one field below, with its type and range. A
misspelled or unknown key, a value of the wrong type (``nframes: true``, ``timeout: "120"``)
or out of range raises ``ValueError``/``TypeError`` whose message names the key and the
value, so a typo never silently falls back to a default. Ints are accepted where floats
are expected; nothing else is coerced.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from vlm_reward.protocol import DEFAULT_MAX_PIXELS, DEFAULT_NFRAMES, DEFAULT_VIDEO_FPS, ScoreMode

Positive = Annotated[float, Field(gt=0)]
PositiveInt = Annotated[int, Field(gt=0)]
UnitInterval = Annotated[float, Field(ge=0.0, le=1.0)]
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Pydantic's error types that mean "wrong type" (TypeError) rather than "bad value" (ValueError).
_TYPE_ERRORS = ("_type", "is_instance_of")


class RewardModelConfig(BaseModel):
    """Settings of the VLM reward path; defaults match the user's design."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)

    enable: bool = Field(
        False, description="Score episodes with the VLM; False: RLinf's LiberoEnv unchanged."
    )
    endpoint: str | list[str] = Field(
        "http://127.0.0.1:18080/score",
        description="POST /score URL of the reward server, or a list of replicas (a call goes to "
        "the least busy one).",
    )
    timeout: Positive = Field(120.0, description="Seconds per scoring request.")
    nframes: PositiveInt = Field(
        DEFAULT_NFRAMES, description="Frames sampled uniformly over the episode (first and last included)."
    )
    max_pixels: PositiveInt = Field(
        DEFAULT_MAX_PIXELS, description="Pixels per frame (256 * 28 * 28), applied by the server."
    )
    backend: str | None = Field(
        "qwen_vl_vllm",
        description="Backend to ask for (or PRIMO-R1, qwen_vl_hf); null: the server's default.",
    )
    backend_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="Per-request overrides, e.g. {prompt: primo, max_new_tokens: 256}.",
    )
    video_fps: Positive = Field(DEFAULT_VIDEO_FPS, description="Frame rate of the MP4 sent to the server.")
    fail_on_request_error: bool = Field(
        False, description="True: stop on a failed request instead of using the fallback."
    )
    binary_reward: bool = Field(
        True, description="True: s = 1[score >= success_threshold]; False: s = score."
    )
    success_threshold: UnitInterval = Field(
        0.5, description="A score at or above it is a VLM success (the episode log's is_success)."
    )
    keep_temp_video: bool = Field(
        False, description="Keep each episode's MP4 (its path goes into the episode log's video_path)."
    )
    temp_video_dir: str | None = Field(
        None, description="Where the MP4s are written; null: the system temp dir."
    )
    # Additions (safe defaults):
    use_for_training: bool = Field(
        True, description="False: shadow mode, score and log but train on the native reward."
    )
    fallback_score: UnitInterval | None = Field(
        None, description="Score of a failed request; null: the episode's native success (0 or 1)."
    )
    send_video_inline: bool = Field(
        False, description="True: send the MP4 in the request as base64 (no shared filesystem needed)."
    )
    score_mode: ScoreMode | None = Field(
        None, description="How the server reads the answer as a score; null: the backend's default."
    )
    max_concurrency: PositiveInt = Field(
        16, description="Episodes scored in parallel when several end in one chunk_step."
    )
    max_retries: Annotated[int, Field(ge=0)] = Field(
        1, description="Retry rounds over the replicas, for connection errors and 503/504 only."
    )
    episode_log_dir: str | None = Field(None, description="Directory of the JSONL episode log; null: no log.")
    replica_cooldown_s: Positive = Field(
        30.0, description="Seconds a replica that refused, timed out or answered 503/504 is skipped."
    )
    # A NAME, never the key itself, which would end up in logs and saved configs.
    api_key_env: str | None = Field(
        None,
        description="Name of the environment variable holding the servers' API key; null: no key.",
    )
    ca_bundle: str | None = Field(
        None, description="PEM bundle to verify https:// replicas; null: the system's CAs."
    )

    @field_validator("api_key_env")
    @classmethod
    def _env_var_name(cls, name: str | None) -> str | None:
        if name is not None and not _ENV_NAME.fullmatch(name):
            raise ValueError(
                "must be the name of an environment variable (letters, digits, _), such as "
                "VLM_REWARD_API_KEY, not the key itself"
            )
        return name

    @field_validator("endpoint")
    @classmethod
    def _http_urls(cls, endpoint: str | list[str]) -> str | list[str]:
        urls = [endpoint] if isinstance(endpoint, str) else endpoint
        if not urls:
            raise ValueError("must be an http(s) URL or a non-empty list of them")
        for url in urls:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"must be an http(s) URL or a list of them; {url!r} is not one")
        if len(set(urls)) != len(urls):
            raise ValueError("lists an endpoint twice")
        return endpoint

    @property
    def endpoints(self) -> tuple[str, ...]:
        """The reward-server replicas to spread requests over (one when ``endpoint`` is a string)."""
        return (self.endpoint,) if isinstance(self.endpoint, str) else tuple(self.endpoint)

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise _readable(exc, values) from None

    @classmethod
    def from_mapping(cls, block: Mapping[str, Any] | None) -> RewardModelConfig:
        """Build from the YAML block (a dict or an OmegaConf node); ``None`` means disabled."""
        return cls() if block is None else cls(**_to_plain_dict(block))

    def api_key(self, environ: Mapping[str, str] = os.environ) -> str | None:
        """The servers' API key, read from the variable ``api_key_env`` names (``None``: no key).

        ``ValueError`` when the variable is named but unset or empty: a run configured for
        keyed servers would otherwise send every episode to a 401 and train on fallbacks.
        """
        if self.api_key_env is None:
            return None
        key = environ.get(self.api_key_env, "").strip()
        if not key:
            raise ValueError(
                f"reward_model.api_key_env names {self.api_key_env!r}, but that environment variable "
                "is unset or empty; export it with the reward server's key (or set api_key_env: null)."
            )
        return key

    def replace(self, **changes: Any) -> RewardModelConfig:
        """A copy with ``changes`` applied, validated like the YAML block."""
        return type(self)(**{**self.model_dump(), **changes})


def _readable(exc: ValidationError, values: Mapping[str, Any]) -> TypeError | ValueError:
    """One sentence per bad key; ``TypeError`` if the first problem is a wrong type."""
    errors = exc.errors()
    problems: dict[str, list[str]] = {}  # key -> messages (a union type gives one per member)
    sentences = []
    for err in errors:
        key = ".".join(str(part) for part in err["loc"][:1])
        if err["type"] == "extra_forbidden":
            valid = ", ".join(RewardModelConfig.model_fields)
            sentences.append(f"unknown key reward_model.{key}; valid keys: {valid}.")
            continue
        message = err["msg"].removeprefix("Value error, ")
        problems.setdefault(key, []).append(f"{message[0].lower()}{message[1:]}")
    for key, messages in problems.items():
        sentences.append(f"reward_model.{key}: {' or '.join(messages)}, got {values.get(key)!r}.")
    first = errors[0]["type"]
    kind = TypeError if any(marker in first for marker in _TYPE_ERRORS) else ValueError
    return kind(" ".join(sentences))


def _to_plain_dict(block: Mapping[str, Any]) -> dict[str, Any]:
    try:
        from omegaconf import DictConfig, OmegaConf
    except ImportError:  # the config is a plain dict when omegaconf is absent
        return dict(block)
    if isinstance(block, DictConfig):
        return OmegaConf.to_container(block, resolve=True)
    return dict(block)
