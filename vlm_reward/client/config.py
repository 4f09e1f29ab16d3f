"""The ``reward_model`` block of the LIBERO env YAML, validated when the env is built.

A typed model (:class:`vlm_reward.config_block.ConfigBlock`): every key of the block is one field
below, with its type and range. A misspelled or unknown key, a value of the wrong type
(``nframes: true``, ``timeout: "120"``) or out of range raises ``ValueError``/``TypeError`` whose
message names the key and the value, so a typo never silently falls back to a default. Ints are
accepted where floats are expected; nothing else is coerced.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator

from vlm_reward.config_block import ConfigBlock
from vlm_reward.protocol import DEFAULT_MAX_PIXELS, DEFAULT_NFRAMES, DEFAULT_VIDEO_FPS, ScoreMode

Positive = Annotated[float, Field(gt=0)]
PositiveInt = Annotated[int, Field(gt=0)]
UnitInterval = Annotated[float, Field(ge=0.0, le=1.0)]
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # what an environment variable's name may be


class RewardModelConfig(ConfigBlock):
    """Settings of the VLM reward path; defaults match the user's design."""

    block_name: ClassVar[str] = "reward_model"

    enable: bool = False
    endpoint: str | list[str] = "http://127.0.0.1:18080/score"  # a list: replicas (see replicas.py)
    timeout: Positive = 120.0
    nframes: PositiveInt = DEFAULT_NFRAMES
    max_pixels: PositiveInt = DEFAULT_MAX_PIXELS
    backend: str | None = "qwen_vl_vllm"  # None: the server's default backend
    backend_kwargs: dict[str, Any] = Field(default_factory=dict)
    video_fps: Positive = DEFAULT_VIDEO_FPS
    fail_on_request_error: bool = False
    binary_reward: bool = True
    success_threshold: UnitInterval = 0.5
    keep_temp_video: bool = False
    temp_video_dir: str | None = None  # None: the system temp dir
    # Additions (safe defaults):
    use_for_training: bool = True  # False = shadow mode: score and log, train on the native reward
    fallback_score: UnitInterval | None = None  # None: the episode's native success (0 or 1)
    send_video_inline: bool = False  # True: send the MP4 as base64 (no shared filesystem needed)
    score_mode: ScoreMode | None = None  # None: the backend's default way of reading its answer
    max_concurrency: PositiveInt = 16  # episodes scored in parallel
    max_retries: Annotated[int, Field(ge=0)] = 1  # extra attempts, only for connection errors and 503/504
    episode_log_dir: str | None = None  # JSONL episode log goes here; None: no log
    replica_cooldown_s: Positive = 30.0  # a replica that failed is skipped this long
    # The NAME of the environment variable holding the servers' API key (never the key itself,
    # which would end up in logs and saved configs); None: the servers need no key.
    api_key_env: str | None = None
    ca_bundle: str | None = None  # PEM bundle to verify https:// replicas; None: the system's CAs

    @field_validator("api_key_env")
    @classmethod
    def _env_var_name(cls, name: str | None) -> str | None:
        if name is not None and not ENV_NAME.fullmatch(name):
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
