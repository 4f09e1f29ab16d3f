"""The episode record: one JSONL line per scored episode, typed, built from a judgement, validated.

The env writes one :class:`EpisodeRecord` per scored episode into
``<episode_log_dir>/vlm_episodes_<split>_rank<N>.jsonl``; the evaluation tools (metrics,
reports, ``rescore``, ``report``, the audit) read them back. This module is the one
definition of that line (the file that holds the lines is :mod:`.episode_log`; the success rule
and the judge's keys are :mod:`vlm_reward.verdict`'s), so that reading a log or re-scoring its
videos needs only ``vlm_reward`` installed (no RLinf).

Canaries (``reward_model.canary_rate``): a counterfactual of a native success, judged while a
policy trains and never trained on, is logged as a line of its own, marked with the
perturbation's name in ``canary`` and ``native_success: false`` (the counterfactual is a
failure by construction). Canary lines are not episodes: the log's readers
(:func:`.episode_log.read_episode_log`, :func:`.episode_log.iter_episode_log`) skip them unless
asked for them (``canaries=True``), so every report and tool that reads episodes reads the same
episodes as before.

Reading is lenient where old logs need it and strict where the metrics would go wrong:
only ``task_id``, ``native_success`` and ``vlm_score`` are required (hand-made and older
logs carry fewer keys), unknown keys are kept in :attr:`EpisodeRecord.extra` and written
back, and a bad value raises ``ValueError`` naming the line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol

from vlm_reward.verdict import JUDGE_KEYS, JudgeIdentity, is_success

# Keys describing the episode (where it ran, what it was), in the order they are written.
META_KEYS = (
    "split",
    "rank",
    "seed_offset",
    "env",
    "episode",
    "task_id",
    "task_text",
    "trial_id",
    "reset_state_id",
    "episode_length",
    "canary",
)
# Keys derived from a judgement and the settings that produced it, in the order they are written.
JUDGEMENT_KEYS = (
    "native_success",
    "vlm_score",
    "vlm_success",
    "vlm_raw_value",
    "vlm_answer",
    "fallback",
    "error",
    "error_kind",
    "latency_s",
    "frames_sent",
    "video_path",
    "endpoint",
    "failovers",
    "used_for_training",
    "binary_reward",
    "success_threshold",
)
# Judgement keys written only when the judge gave them (a frame classifier's per-frame scores), so a
# line of any other judge reads and writes back as it did before them; last, as the longest.
OPTIONAL_JUDGEMENT_KEYS = ("frame_scores",)
REQUIRED_KEYS = ("task_id", "native_success", "vlm_score")


class Judgement(Protocol):
    """What a scoring call returns (the client's ``ScoreResult`` is one)."""

    score: float
    raw_value: float | None
    answer: str | None
    latency_s: float
    fallback: bool
    error: str | None
    error_kind: str | None
    video_path: str | None
    num_frames_sent: int
    endpoint: str | None
    failovers: int
    judge: JudgeIdentity | None
    frame_scores: tuple[float, ...] | None


class JudgementSettings(Protocol):
    """The settings a record names (``RewardModelConfig`` is one)."""

    success_threshold: float
    binary_reward: bool
    use_for_training: bool


@dataclass(frozen=True)
class EpisodeRecord:
    """One scored episode as logged. ``None``: not in the line (older or hand-made logs).

    ``vlm_success`` is the verdict at the run's ``success_threshold``; a report at another
    threshold recomputes it with :func:`is_success`.
    """

    task_id: int | str
    """The task's index in its LIBERO suite (a name in a hand-made log)."""
    native_success: bool
    """Whether LIBERO's simulator counted the episode a success (false for a canary)."""
    vlm_score: float
    """The judge's score in [0, 1]; on a fallback, the fallback score."""
    split: str | None = None
    """``train`` or ``eval``: which of the run's env groups scored it."""
    rank: int | None = None
    """The env worker's rank (the ``rank<N>`` of the file name)."""
    seed_offset: int | None = None
    """RLinf's seed offset of the env group (tells a worker's pipeline stages apart)."""
    env: int | None = None
    """The env's index within its group."""
    episode: int | None = None
    """How many episodes of this env were scored before it."""
    task_text: str | None = None
    """The instruction the judge was given."""
    trial_id: int | None = None
    """RLinf's trial of the task (which of its initial states)."""
    reset_state_id: int | None = None
    """The initial state's index in the suite (the task's first state plus the trial)."""
    episode_length: int | None = None
    """Steps the episode took."""
    canary: str | None = None
    """The perturbation of a canary line (a counterfactual of a native success); absent: an episode."""
    vlm_success: bool | None = None
    """The judge's verdict at ``success_threshold`` (``vlm_score >= success_threshold``)."""
    vlm_raw_value: float | None = None
    """The number read from the answer before it was scaled to [0, 1]; null when none was read."""
    vlm_answer: str | None = None
    """The judge's answer text; null when there is none (a fallback)."""
    fallback: bool = False
    """Whether the request failed and ``vlm_score`` is the fallback score."""
    error: str | None = None
    """Why the request failed (a fallback); null otherwise."""
    error_kind: str | None = None
    """The failure's kind (the server's error type, e.g. ``parse_error``, or ``connection``, ``timeout``)."""
    latency_s: float | None = None
    """Seconds from sending the video to the answer (or the failure)."""
    frames_sent: int | None = None
    """Frames the judge was asked to sample (``nframes`` of the request)."""
    video_path: str | None = None
    """The episode's video, when it was kept (``keep_temp_video``)."""
    endpoint: str | None = None
    """The replica that answered; null on a fallback."""
    failovers: int | None = None
    """Replicas that failed before the one that answered."""
    used_for_training: bool | None = None
    """Whether the score was the episode's reward (false for a canary, or once the guard chose native)."""
    binary_reward: bool | None = None
    """The run's ``binary_reward``: the reward was ``vlm_success`` (true) or ``vlm_score`` (false)."""
    success_threshold: float | None = None
    """The run's ``success_threshold``, which ``vlm_success`` was judged at."""
    frame_scores: tuple[float, ...] | None = None
    """Each frame's score in [0, 1], in the video's order, from a judge that scores frames one by one
    (the ``resnet`` backend: every frame it was sent); null from the others and on a fallback."""
    judge_backend: str | None = None
    """The judge's backend, as its server answered; absent on a fallback and in older logs."""
    judge_model: str | None = None
    """The judge's model, as its server names it; absent on a fallback and in older logs."""
    score_mode: str | None = None
    """How the answer was read as a score; absent on a fallback and in older logs."""
    prompt_preset: str | None = None
    """The prompt preset the judge was asked with; absent on a fallback and in older logs."""
    prompt_hash: str | None = None
    """The prompt's fingerprint (tells edited prompts apart); absent on a fallback and in older logs."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Keys this model does not know, kept and written back (not a key of the line)."""

    @classmethod
    def judged(
        cls,
        meta: Mapping[str, Any],
        result: Judgement,
        native_success: bool,
        settings: JudgementSettings,
        used_for_training: bool | None = None,
    ) -> EpisodeRecord:
        """The record of one episode: ``meta`` (task, ids, length, kept unknown keys) plus the judgement.

        ``used_for_training`` defaults to the settings' (``False`` for a canary, or an episode
        trained on the native reward because the guard stopped trusting the judge).
        """
        if used_for_training is None:
            used_for_training = settings.use_for_training
        judgement = {
            "native_success": bool(native_success),
            "vlm_score": result.score,
            "vlm_success": is_success(result.score, settings.success_threshold),
            "vlm_raw_value": result.raw_value,
            "vlm_answer": result.answer,
            "fallback": result.fallback,
            "error": result.error,
            "error_kind": result.error_kind,
            "latency_s": round(result.latency_s, 4),
            "frames_sent": result.num_frames_sent,
            "video_path": result.video_path,
            "endpoint": result.endpoint,
            "failovers": result.failovers,
            "used_for_training": used_for_training,
            "binary_reward": settings.binary_reward,
            "success_threshold": settings.success_threshold,
        }
        judge = {} if result.judge is None else result.judge.to_record()
        frames = {} if result.frame_scores is None else {"frame_scores": list(result.frame_scores)}
        return cls.from_json({**meta, **judgement, **judge, **frames})

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "episode record") -> EpisodeRecord:
        """Validate one decoded line; ``ValueError`` starting with ``where`` names the bad key."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}.")
        missing = [key for key in REQUIRED_KEYS if key not in data]
        if missing:
            raise ValueError(f"{where} lacks {missing}; required keys: {list(REQUIRED_KEYS)}.")
        native, score = data["native_success"], data["vlm_score"]
        # The env writes a bool; 0/1 from a hand-made or re-encoded log means the same thing.
        if native not in (True, False):
            raise ValueError(f"{where}: native_success must be true/false, got {native!r}.")
        if not (_is_number(score) and 0.0 <= score <= 1.0):
            raise ValueError(f"{where}: vlm_score must be a number in [0, 1], got {score!r}.")
        known = {f.name for f in fields(cls)} - {"extra"}
        values = {key: value for key, value in data.items() if key in known}
        extra = {key: value for key, value in data.items() if key not in known}
        values.update(native_success=bool(native), fallback=bool(data.get("fallback") or False))
        if values.get("frame_scores") is not None:
            values["frame_scores"] = _unit_scores(values["frame_scores"], f"{where}: frame_scores")
        return cls(**values, extra=extra)

    def to_json(self) -> dict[str, Any]:
        """The line's object: the episode's keys that are set, unknown keys, every judgement key,
        then the judge's keys and the optional judgement keys that are set."""
        meta = {key: getattr(self, key) for key in META_KEYS if getattr(self, key) is not None}
        judgement = {key: getattr(self, key) for key in JUDGEMENT_KEYS}
        judge = {key: getattr(self, key) for key in JUDGE_KEYS if getattr(self, key) is not None}
        optional = {
            key: list(getattr(self, key)) for key in OPTIONAL_JUDGEMENT_KEYS if getattr(self, key) is not None
        }
        return {**meta, **self.extra, **judgement, **judge, **optional}

    @property
    def meta(self) -> dict[str, Any]:
        """What describes the episode rather than its judgement (copied when it is judged again)."""
        judged = (*JUDGEMENT_KEYS, *JUDGE_KEYS, *OPTIONAL_JUDGEMENT_KEYS)
        return {key: value for key, value in self.to_json().items() if key not in judged}

    @property
    def is_canary(self) -> bool:
        """Whether this line is a canary (a counterfactual judged while training), not an episode."""
        return self.canary is not None

    @property
    def judge(self) -> JudgeIdentity | None:
        """Who judged this episode; ``None`` for a fallback or a line older than the judge keys."""
        if self.judge_backend is None or self.judge_model is None:
            return None
        return JudgeIdentity(
            self.judge_backend, self.judge_model, self.score_mode, self.prompt_preset, self.prompt_hash
        )

    def at_threshold(self, threshold: float, binary_reward: bool | None = None) -> EpisodeRecord:
        """This record judged at ``threshold`` (and ``binary_reward`` when given); the score unchanged."""
        changed: dict[str, Any] = {
            "success_threshold": threshold,
            "vlm_success": is_success(self.vlm_score, threshold),
        }
        if binary_reward is not None:
            changed["binary_reward"] = binary_reward
        return replace(self, **changed)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _unit_scores(values: Any, what: str) -> tuple[float, ...]:
    """``values`` as a tuple of numbers in [0, 1]; ``ValueError`` naming ``what`` otherwise."""
    if not isinstance(values, (list, tuple)) or not all(_is_number(v) and 0.0 <= v <= 1.0 for v in values):
        raise ValueError(f"{what} must be a list of numbers in [0, 1], got {values!r}.")
    return tuple(float(v) for v in values)


def as_record(record: EpisodeRecord | Mapping[str, Any], where: str = "episode record") -> EpisodeRecord:
    """``record`` itself, or a decoded line validated (:meth:`EpisodeRecord.from_json`).

    ``TypeError`` for anything else (a caller's mistake, not a bad line).
    """
    if isinstance(record, EpisodeRecord):
        return record
    if not isinstance(record, Mapping):
        raise TypeError(f"{where} must be an EpisodeRecord or a mapping, got {type(record).__name__}.")
    return EpisodeRecord.from_json(record, where)
