"""The episode record: one JSONL line per scored episode, its success rule, its file.

The env writes one :class:`EpisodeRecord` per scored episode into
``<episode_log_dir>/vlm_episodes_<split>_rank<N>.jsonl``; the evaluation tools (metrics,
reports, ``rescore``, ``report``, the audit) read them back. This module is the one
definition of that line, of how it is read and written, and of the success rule
``score >= threshold`` (:func:`is_success`), so that reading a log or re-scoring its
videos needs only ``vlm_reward`` installed (no RLinf).

Canaries (``reward_model.canary_rate``): a counterfactual of a native success, judged while a
policy trains and never trained on, is logged as a line of its own, marked with the
perturbation's name in ``canary`` and ``native_success: false`` (the counterfactual is a
failure by construction). Canary lines are not episodes: :func:`read_episode_log` and
:func:`iter_episode_log` skip them unless asked for them (``canaries=True``), so every report
and tool that reads episodes reads the same episodes as before.

Reading is lenient where old logs need it and strict where the metrics would go wrong:
only ``task_id``, ``native_success`` and ``vlm_score`` are required (hand-made and older
logs carry fewer keys), unknown keys are kept in :attr:`EpisodeRecord.extra` and written
back, and a bad value raises ``ValueError`` naming the line.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol

SPLITS = ("train", "eval")
EPISODE_LOG_GLOB = "vlm_episodes_*.jsonl"
TRAIN_LOG_GLOB = "vlm_episodes_train_*.jsonl"

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
# Who judged, from the server's response: written when known (never on a fallback, and not by
# servers or logs older than these keys), so older lines read and write back unchanged.
JUDGE_KEYS = ("judge_backend", "judge_model", "score_mode", "prompt_preset", "prompt_hash")
REQUIRED_KEYS = ("task_id", "native_success", "vlm_score")


def is_success(score: float, threshold: float) -> bool:
    """The success rule everywhere (the env's ``vlm_success``, its binary signal, every report):
    a score at or above the threshold is a success."""
    return float(score) >= threshold


@dataclass(frozen=True)
class JudgeIdentity:
    """Which judge scored an episode, as its server answered: backend, model, how the answer was
    read, and the prompt (its preset and its fingerprint, which tells edited prompts apart).

    Two episodes with different identities were not judged alike: a report over both says so.
    """

    backend: str
    model: str
    score_mode: str | None = None
    prompt_preset: str | None = None
    prompt_hash: str | None = None

    def __str__(self) -> str:
        parts = [f"{self.backend} on {self.model}"]
        if self.score_mode is not None:
            parts.append(f"score_mode {self.score_mode}")
        if self.prompt_preset is not None:
            parts.append(f"prompt {self.prompt_preset} ({self.prompt_hash})")
        return ", ".join(parts)

    def to_record(self) -> dict[str, Any]:
        """The record's judge keys (:data:`JUDGE_KEYS`)."""
        values = (self.backend, self.model, self.score_mode, self.prompt_preset, self.prompt_hash)
        return dict(zip(JUDGE_KEYS, values, strict=True))


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
        return cls.from_json({**meta, **judgement, **judge})

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
        return cls(**values, extra=extra)

    def to_json(self) -> dict[str, Any]:
        """The line's object: the episode's keys that are set, unknown keys, every judgement key,
        then the judge's keys that are set."""
        meta = {key: getattr(self, key) for key in META_KEYS if getattr(self, key) is not None}
        judge = {key: getattr(self, key) for key in JUDGE_KEYS if getattr(self, key) is not None}
        return {**meta, **self.extra, **{key: getattr(self, key) for key in JUDGEMENT_KEYS}, **judge}

    @property
    def meta(self) -> dict[str, Any]:
        """What describes the episode rather than its judgement (copied when it is judged again)."""
        judged = (*JUDGEMENT_KEYS, *JUDGE_KEYS)
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


def as_record(record: EpisodeRecord | Mapping[str, Any], where: str = "episode record") -> EpisodeRecord:
    """``record`` itself, or a decoded line validated (:meth:`EpisodeRecord.from_json`).

    ``TypeError`` for anything else (a caller's mistake, not a bad line).
    """
    if isinstance(record, EpisodeRecord):
        return record
    if not isinstance(record, Mapping):
        raise TypeError(f"{where} must be an EpisodeRecord or a mapping, got {type(record).__name__}.")
    return EpisodeRecord.from_json(record, where)


def parse_line(line: str, where: str) -> EpisodeRecord:
    """One JSONL line as a record; ``ValueError`` starting with ``where`` for bad JSON or values."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc.msg}).") from exc
    return EpisodeRecord.from_json(data, where)


def iter_episode_log(path: str | os.PathLike[str], canaries: bool = False) -> Iterator[EpisodeRecord]:
    """The episodes of a JSONL episode log (``canaries=True``: its canary lines instead), blank
    lines skipped.

    A bad line (a truncated last line of a crashed run included: better to say so than to
    silently evaluate fewer episodes) raises ``ValueError`` naming the file and the 1-based
    line number.
    """
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                record = parse_line(line, f"{os.fspath(path)}, line {number}")
                if record.is_canary == canaries:
                    yield record


def read_episode_log(path: str | os.PathLike[str], canaries: bool = False) -> list[EpisodeRecord]:
    """Every episode of a JSONL episode log, or with ``canaries=True`` every canary line (see
    :func:`iter_episode_log`)."""
    return list(iter_episode_log(path, canaries))


def episode_log_path(log_dir: str, split: str, rank: int) -> str:
    """``<log_dir>/vlm_episodes_<split>_rank<rank>.jsonl``; ``rank`` is the env worker's rank.

    Every env of one worker (RLinf's pipeline stages) writes to its worker's file; the
    lines tell them apart by ``seed_offset``.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}.")
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise ValueError(f"rank must be an int >= 0, got {rank!r}.")
    return os.path.join(log_dir, f"vlm_episodes_{split}_rank{rank}.jsonl")


class EpisodeLogWriter:
    """Append-only JSONL file, one line per record; safe to share between threads.

    Each line goes out in one ``write`` on a file opened with ``O_APPEND``, so several
    writers on the same path (the envs of one worker) never interleave their lines, and a
    crashed run keeps every episode it scored.
    """

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, record: EpisodeRecord) -> None:
        """Append ``record`` as one line (``ValueError`` once closed)."""
        data = (json.dumps(record.to_json(), ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                raise ValueError(f"episode log {self.path} is closed.")
            view = memoryview(data)
            while view:  # a regular file takes it whole; the loop only guards a short write
                view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        """Close the file; closing twice is fine, writing after is ``ValueError``."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def write_episode_log(path: str | os.PathLike[str], records: Iterable[EpisodeRecord]) -> None:
    """Write ``records`` as a JSONL episode log (appending, as the env does)."""
    log = EpisodeLogWriter(os.fspath(path))
    try:
        for record in records:
            log.write(record)
    finally:
        log.close()
