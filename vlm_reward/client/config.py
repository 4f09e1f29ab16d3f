"""The ``reward_model`` block of the LIBERO env YAML, validated when the env is built.

A typed model (:class:`vlm_reward.config_block.ConfigBlock`): every key of the block is one field
below, with its type and range. A misspelled or unknown key, a value of the wrong type
(``nframes: true``, ``timeout: "120"``) or out of range raises ``ValueError``/``TypeError`` whose
message names the key and the value, so a typo never silently falls back to a default. Ints are
accepted where floats are expected; nothing else is coerced. The nested ``guard`` block is checked
the same way, and its errors name the full key (``reward_model.guard.window``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from vlm_reward.config_block import STRICT, ConfigBlock
from vlm_reward.exit_statuses import EXIT_GUARD_STOP
from vlm_reward.perturbations import perturbation_names
from vlm_reward.protocol import (
    DEFAULT_ENDPOINT,
    DEFAULT_MAX_PIXELS,
    DEFAULT_NFRAMES,
    DEFAULT_VIDEO_FPS,
    ScoreMode,
)
from vlm_reward.verdict import DEFAULT_SUCCESS_THRESHOLD

Positive = Annotated[float, Field(gt=0)]
PositiveInt = Annotated[int, Field(gt=0)]
UnitInterval = Annotated[float, Field(ge=0.0, le=1.0)]
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
GuardAction = Literal["warn", "native", "stop"]
DEFAULT_CANARY_PERTURBATIONS = ("reversed", "frozen", "clipped")
# The tag of the fields that change what the judge is asked (the request's content, not where it
# goes or what is done with the answer): every path that judges must send them as configured.
ASKS_JUDGE = {"asks_judge": True}


class RewardGuardConfig(BaseModel):
    """``reward_model.guard``: what to do when the judge's live false-positive rate is too high.

    The rate is judged success on native failure, over the native failures among the last
    ``window`` judged episodes that trained on the judge (fallbacks never count; canaries
    when ``count_canaries``). The decision is :class:`vlm_reward.watch.guard.RewardGuard`'s.
    """

    model_config = STRICT

    enable: bool = Field(False, description="Watch the judge's false-positive rate during training and act.")
    action: GuardAction = Field(
        "warn",
        description="warn: log it; native: train on the native reward from then on; "
        f"stop: end the run after a checkpoint (exit status {EXIT_GUARD_STOP}).",
    )
    max_false_positive_rate: UnitInterval = Field(
        0.2, description="The guard acts when the window's false-positive rate is above this."
    )
    clear_false_positive_rate: UnitInterval | None = Field(
        None,
        description="warn only: warn again only after the rate fell to this or below "
        "(hysteresis); null: half of max_false_positive_rate.",
    )
    min_episodes: PositiveInt = Field(
        20, description="Native failures the window must hold before the guard may act (small samples)."
    )
    window: PositiveInt = Field(100, description="Judged episodes in the guard's rolling window.")
    count_canaries: bool = Field(False, description="Canaries count toward the guard as native failures.")

    @model_validator(mode="after")
    def _consistent(self) -> RewardGuardConfig:
        if self.min_episodes > self.window:
            raise ValueError(
                f"min_episodes ({self.min_episodes}) must be at most window ({self.window}): the window "
                "could never hold that many native failures, so the guard could never act"
            )
        if self.clear_false_positive_rate is not None and (
            self.clear_false_positive_rate > self.max_false_positive_rate
        ):
            raise ValueError(
                f"clear_false_positive_rate ({self.clear_false_positive_rate}) must be at most "
                f"max_false_positive_rate ({self.max_false_positive_rate})"
            )
        return self

    @property
    def clear_rate(self) -> float:
        """The rate at or below which a ``warn`` guard re-arms."""
        if self.clear_false_positive_rate is None:
            return self.max_false_positive_rate / 2
        return self.clear_false_positive_rate


class RewardModelConfig(ConfigBlock):
    """Settings of the VLM reward path; defaults match the user's design."""

    block_name: ClassVar[str] = "reward_model"

    enable: bool = Field(
        False, description="Score episodes with the VLM; False: RLinf's LiberoEnv unchanged."
    )
    endpoint: str | list[str] = Field(
        DEFAULT_ENDPOINT,
        description="POST /score URL of the reward server, or a list of replicas (a call goes to "
        "the least busy one).",
    )
    timeout: Positive = Field(120.0, description="Seconds per scoring request.")
    nframes: PositiveInt = Field(
        DEFAULT_NFRAMES,
        description="Frames sampled uniformly over the episode (first and last included).",
        json_schema_extra=ASKS_JUDGE,
    )
    max_pixels: PositiveInt = Field(
        DEFAULT_MAX_PIXELS,
        description="Pixels per frame (256 * 28 * 28), applied by the server.",
        json_schema_extra=ASKS_JUDGE,
    )
    backend: str | None = Field(
        "qwen_vl_vllm",
        description="Backend to ask for (or PRIMO-R1, qwen_vl_hf); null: the server's default.",
    )
    backend_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="Per-request overrides, e.g. {prompt: primo, max_new_tokens: 256}.",
        json_schema_extra=ASKS_JUDGE,
    )
    video_fps: Positive = Field(
        DEFAULT_VIDEO_FPS,
        description="Frame rate of the MP4 sent to the server.",
        json_schema_extra=ASKS_JUDGE,
    )
    native_frame_size: bool = Field(
        False,
        description="True: the judge sees frames at their own size in whole visual tokens (256 px: "
        "252 for Qwen2.5-VL, 256 for Qwen3-VL), not upscaled to its video pixel floor (336, 384).",
        json_schema_extra=ASKS_JUDGE,
    )
    fail_on_request_error: bool = Field(
        False, description="True: stop on a failed request instead of using the fallback."
    )
    binary_reward: bool = Field(
        True, description="True: s = 1[score >= success_threshold]; False: s = score."
    )
    success_threshold: UnitInterval = Field(
        DEFAULT_SUCCESS_THRESHOLD,
        description="A score at or above it is a VLM success (the episode log's is_success).",
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
        None,
        description="How the server reads the answer as a score; null: the backend's default.",
        json_schema_extra=ASKS_JUDGE,
    )
    max_concurrency: PositiveInt = Field(
        16, description="Episodes scored in parallel when several end in one chunk_step."
    )
    max_retries: Annotated[int, Field(ge=0)] = Field(
        1, description="Retry rounds over the replicas, for connection errors and 503/504 only."
    )
    episode_log_dir: str | None = Field(
        None,
        description="Directory of the JSONL episode log; null: no log. The env YAMLs default to the "
        "training run's log dir.",
        json_schema_extra={"yaml": "${oc.select:runner.logger.log_path,null}"},
    )
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
    # Watching the judge while the policy trains (vlm_reward.watch):
    health_window: PositiveInt = Field(
        100, description="Judged episodes per rolling window of the live false-positive/negative metrics."
    )
    canary_rate: UnitInterval = Field(
        0.0, description="Fraction of native successes also judged as a counterfactual canary; 0: off."
    )
    canary_perturbations: list[str] = Field(
        default_factory=lambda: list(DEFAULT_CANARY_PERTURBATIONS),
        description="Which counterfactuals canaries are, taken in turn (vlm_reward.perturbations).",
    )
    canary_max_per_chunk: PositiveInt = Field(2, description="Canaries started per chunk_step at most.")
    guard: RewardGuardConfig = Field(
        default_factory=RewardGuardConfig, description="Act when the judge's false-positive rate is too high."
    )

    @field_validator("canary_perturbations")
    @classmethod
    def _registered(cls, names: list[str]) -> list[str]:
        valid = perturbation_names()
        unknown = [name for name in names if name not in valid]
        if unknown or not names:
            raise ValueError(f"must name perturbations among {', '.join(valid)}; {unknown or 'none'} given")
        if len(set(names)) != len(names):
            raise ValueError("names a perturbation twice")
        return names

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

    def judge_request(self) -> dict[str, Any]:
        """What every request of this block asks the judge: its judge-facing keys
        (:func:`judge_facing_keys`), a null ``score_mode`` (the backend's own) left out; the
        launchers give it to a server's self-test so that it is asked as the env asks."""
        asked = {key: getattr(self, key) for key in judge_facing_keys()}
        return {key: value for key, value in asked.items() if value is not None}

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


def judge_facing_keys() -> tuple[str, ...]:
    """The ``reward_model`` keys tagged as changing what the judge is asked, in declaration order."""
    return tuple(
        name
        for name, field in RewardModelConfig.model_fields.items()
        if isinstance(field.json_schema_extra, dict) and field.json_schema_extra.get("asks_judge")
    )
