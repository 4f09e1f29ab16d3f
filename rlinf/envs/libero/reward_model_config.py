"""The ``reward_model`` block of the LIBERO env YAML, validated when the env is built.

Every key of the block maps to one field below. A misspelled or unknown key, a value of
the wrong type or out of range raises ``ValueError``/``TypeError`` naming the key, so a
typo never silently falls back to a default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

SCORE_MODES = ("auto", "percentage", "unit")


@dataclass(frozen=True)
class RewardModelConfig:
    """Settings of the VLM reward path; defaults match the user's design."""

    enable: bool = False
    endpoint: str = "http://127.0.0.1:18080/score"
    timeout: float = 120.0
    nframes: int = 16
    max_pixels: int = 200704
    backend: str | None = "qwen2_5_vl_vllm"  # None: the server's default backend
    backend_kwargs: dict[str, Any] = field(default_factory=dict)
    video_fps: float = 4.0
    fail_on_request_error: bool = False
    binary_reward: bool = True
    success_threshold: float = 0.5
    keep_temp_video: bool = False
    temp_video_dir: str | None = None  # None: the system temp dir
    # Additions (safe defaults):
    use_for_training: bool = True  # False = shadow mode: score and log, train on the native reward
    fallback_score: float | None = None  # None: the episode's native success (0 or 1)
    send_video_inline: bool = False  # True: send the MP4 as base64 (no shared filesystem needed)
    score_mode: str | None = None  # None: the backend's default way of reading its answer
    max_concurrency: int = 16  # episodes scored in parallel at the end of a chunk_step
    max_retries: int = 1  # extra attempts, only for connection errors and 502/503/504
    episode_log_dir: str | None = None  # JSONL episode log goes here; None: no log

    def __post_init__(self) -> None:
        _check_positive(self, "timeout", "nframes", "max_pixels", "video_fps", "max_concurrency")
        if self.max_retries < 0:
            raise ValueError(f"reward_model.max_retries must be >= 0, got {self.max_retries}.")
        if not 0.0 <= self.success_threshold <= 1.0:
            raise ValueError(
                f"reward_model.success_threshold must be in [0, 1], got {self.success_threshold}."
            )
        if self.fallback_score is not None and not 0.0 <= self.fallback_score <= 1.0:
            raise ValueError(
                f"reward_model.fallback_score must be in [0, 1] or null, got {self.fallback_score}."
            )
        if self.score_mode is not None and self.score_mode not in SCORE_MODES:
            raise ValueError(
                f"reward_model.score_mode must be one of {', '.join(SCORE_MODES)} or null, "
                f"got {self.score_mode!r}."
            )
        if not self.endpoint.startswith(("http://", "https://")):
            raise ValueError(f"reward_model.endpoint must be an http(s) URL, got {self.endpoint!r}.")

    @classmethod
    def from_mapping(cls, block: Mapping[str, Any] | None) -> RewardModelConfig:
        """Build from the YAML block (a dict or an OmegaConf node); ``None`` means disabled."""
        if block is None:
            return cls()
        block = _to_plain_dict(block)
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(block) - set(known))
        if unknown:
            raise ValueError(
                f"unknown key(s) in reward_model: {', '.join(unknown)}; valid keys: {', '.join(known)}."
            )
        return cls(**{name: _coerce(known[name], value) for name, value in block.items()})


def _to_plain_dict(block: Mapping[str, Any]) -> dict[str, Any]:
    try:
        from omegaconf import DictConfig, OmegaConf
    except ImportError:  # the config is a plain dict when omegaconf is absent
        return dict(block)
    if isinstance(block, DictConfig):
        return OmegaConf.to_container(block, resolve=True)
    return dict(block)


_TYPES = {
    "bool": (bool,),
    "int": (int,),
    "float": (int, float),
    "str": (str,),
}


def _coerce(f: Any, value: Any) -> Any:
    """Check ``value`` against the field's annotation; ints are accepted for floats."""
    annotation = str(f.type)
    optional = "None" in annotation
    if value is None:
        if optional:
            return None
        raise TypeError(f"reward_model.{f.name} must not be null.")
    if annotation.startswith("dict"):
        if not isinstance(value, Mapping):
            raise TypeError(f"reward_model.{f.name} must be a mapping, got {type(value).__name__}.")
        return dict(value)
    base = annotation.split(" ")[0].split("|")[0]
    allowed = _TYPES[base]
    # bool is an int subclass: `nframes: true` must not pass as 1.
    if not isinstance(value, allowed) or (base != "bool" and isinstance(value, bool)):
        raise TypeError(f"reward_model.{f.name} must be {base}, got {type(value).__name__} {value!r}.")
    if base == "float":
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"reward_model.{f.name} must be finite, got {value}.")
    return value


def _check_positive(cfg: RewardModelConfig, *names: str) -> None:
    for name in names:
        value = getattr(cfg, name)
        if not value > 0:
            raise ValueError(f"reward_model.{name} must be > 0, got {value}.")
