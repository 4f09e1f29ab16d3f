"""The backend contract and the registry that maps names to backends.

A backend turns a batch of :class:`ScoreJob` into one raw model answer per job.
Parsing that answer into a score is the server's job (``vlm_reward.judging.parsing``), so every
backend is scored the same way and a backend only has to know its model.

Backends register themselves by name (plus aliases) with :func:`register_backend`; the
server looks them up with :func:`resolve_backend`. Registering never imports torch,
transformers or vLLM: a backend imports those in :meth:`RewardBackend.load`.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from vlm_reward.backends.batching import DynamicBatcher, JobRunner
from vlm_reward.frames import evenly_spaced
from vlm_reward.judging.prompts import PromptSpec, ServerPrompts
from vlm_reward.protocol import TEXT_SCORE_MODES

if TYPE_CHECKING:
    from vlm_reward.video_io import Clip


@dataclass
class TokenUsage:
    """The tokens one job cost: its prompt (text and vision) and what the model generated.

    A judgement read from the logits (score mode "probability") reads one answer position:
    it counts as one generated token, as vLLM reports it. Zeros mean "not counted" (a
    backend that cannot tell, a job that failed before the model ran).
    """

    prompt: int = 0
    generated: int = 0

    def record(self, prompt: int, generated: int) -> None:
        """Set the job's counts (a backend calls this once, when the job's answer is ready)."""
        self.prompt, self.generated = int(prompt), int(generated)


@dataclass(frozen=True)
class ScoreJob:
    """One episode to judge, already validated by the server.

    ``video_path`` is a readable MP4 on the server's filesystem (inline uploads are
    written to a temp file first). ``clip`` holds its frames, decoded once by the server:
    those :meth:`RewardBackend.frame_indices` asked for, plus the first and last. A job
    built without one (offline use, tests) is decoded by the backend itself.
    ``backend_kwargs`` are the request's per-call overrides (prompt text, sampling params,
    ...); each backend documents the keys it accepts and rejects the others with
    ``ValueError``.

    ``cancelled`` is set when nobody waits for the answer any more (the client went away,
    the server is shutting down). A backend should check it between tokens and stop that
    job early, answering :class:`JobCancelledError` for it; other jobs of the batch go on.

    ``native_frame_size`` asks for the frames at their own size (rounded to whole visual tokens)
    instead of upscaled to the model's video pixel floor (:mod:`vlm_reward.backends.qwen_vision`).

    ``usage`` is where a backend that can count tokens records what the job cost
    (:meth:`TokenUsage.record`); the server adds it to ``/metrics``' token counters.
    """

    task_text: str
    video_path: str
    nframes: int
    max_pixels: int
    video_fps: float
    backend_kwargs: dict[str, Any] = field(default_factory=dict)
    cancelled: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)
    clip: Clip | None = field(default=None, compare=False, repr=False)
    score_mode: str | None = None  # how the answer is read; None: the backend's default
    native_frame_size: bool = False  # frames at their own size, without the video pixel floor
    usage: TokenUsage = field(default_factory=TokenUsage, compare=False, repr=False)


class JobCancelledError(RuntimeError):
    """What a backend answers for a job it stopped because ``job.cancelled`` was set."""


@dataclass(frozen=True)
class ProbabilityAnswer:
    """An answer read from the model's distribution (``score_mode`` "probability"), not its text.

    ``probability`` is the expected score of the preset's answer scale at the first answer
    position (:func:`vlm_reward.judging.probability.expected_score`; yes/no: P(yes) / (P(yes) + P(no))),
    ``answer`` the likeliest answer word. ``frame_scores``: a judge that scores frames one by one
    (a frame classifier) gives each frame's value, in the video's order, and the response carries
    them (``ScoreResponse.frame_scores``); ``None`` for a judge that has none.
    """

    probability: float
    answer: str
    frame_scores: tuple[float, ...] | None = None


class RewardBackend(abc.ABC):
    """A loaded model that answers "how well was this task done in this video?".

    Lifecycle: the server constructs the backend with the model path and the server-side
    ``backend_kwargs`` (cheap, validates arguments), calls :meth:`check_model` (cheap,
    checks the checkpoint exists and fits), then calls :meth:`load` once (slow,
    heavy imports, weights), then :meth:`generate` from one worker thread at a time.

    ``default_score_mode`` is how this backend's answers are read when the request does not
    say; ``score_modes`` are the modes it can serve. A text mode ("auto", "percentage",
    "unit") means :meth:`generate` answers text the server parses; "probability" means it
    answers a :class:`ProbabilityAnswer` for jobs in that mode.

    Cost: a backend that generates tokens reports each job's budget through
    :meth:`token_budget` and honours ``ScoreJob.cancelled``, so the server can bound and
    stop its work.
    """

    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    # What the judge is, in a report's words ("video VLM", "ResNet success classifier"): a report
    # names its judge by it, never as a VLM when it is not one.
    judge_kind: ClassVar[str] = "judge"
    default_score_mode: ClassVar[str] = "auto"
    score_modes: ClassVar[tuple[str, ...]] = TEXT_SCORE_MODES
    # The prompts this backend asks with (a preset plus the server's --backend-kwargs), or None
    # for one that builds no prompt of the project's (a plugin that answers without asking).
    prompts: ServerPrompts | None = None

    def __init__(self, model: str, **backend_kwargs: Any) -> None:
        self.model = model
        self.backend_kwargs = backend_kwargs

    def check_model(self) -> None:  # noqa: B027 - optional hook, most backends need nothing
        """Check ``model`` at start-up, before the server listens: raise ``ValueError`` in one
        sentence for one this backend cannot load (a missing local path, an unsupported
        architecture). Cheap: no weights, no network."""

    def describe_model(self, display_name: str) -> str:
        """The model as every response (the judge identity) names it; ``display_name`` is the
        ``--model`` without its host path. A backend whose verdict also depends on a setting the
        prompt does not carry (a classifier's aggregate) names it here."""
        return display_name

    def prompt_spec(self, score_mode: str, backend_kwargs: Mapping[str, Any]) -> PromptSpec | None:
        """The prompt a job in ``score_mode`` with ``backend_kwargs`` is asked with (``None``
        without :attr:`prompts`). ``ValueError``/``TypeError`` for overrides no prompt can take
        (an unknown preset, a preset read in another mode): the server answers 400 before queueing.
        Every response names it (preset and fingerprint), so a log says which prompt judged."""
        if self.prompts is None:
            return None
        return self.prompts.for_job(score_mode, dict(backend_kwargs))

    @abc.abstractmethod
    def load(self) -> None:
        """Load weights and heavy libraries; raise ``ImportError`` with the install command if missing."""

    @abc.abstractmethod
    def generate(self, jobs: Sequence[ScoreJob]) -> list[str | ProbabilityAnswer | Exception]:
        """Return one raw answer per job, in order; a job that failed gets its exception instead.

        Raising means the whole batch failed (every job gets that error).
        """

    def frame_indices(self, total_frames: int, nframes: int) -> list[int]:
        """Which frames of a ``total_frames``-long video this backend shows for ``nframes``.

        The server decodes the video once and hands the backend these (``ScoreJob.clip``).
        Default: :func:`vlm_reward.frames.evenly_spaced` (``min(nframes, total_frames)``
        frames, first and last included). Raise ``ValueError`` if the video is too short for the model (400).
        """
        return evenly_spaced(total_frames, nframes)

    def token_budget(self, backend_kwargs: Mapping[str, Any]) -> int | None:
        """Most new tokens a job with these per-request ``backend_kwargs`` may generate.

        The server refuses a request whose budget is above its ``--max-new-tokens`` (422)
        before queueing it, and checks the server-wide default (``{}``) at start-up and after
        :meth:`load`. Raise ``ValueError``/``TypeError`` for invalid kwargs, as
        :meth:`generate` would. ``None`` (the default) means the backend cannot tell; the
        cap is then not enforced for it, which the server logs once.
        """
        return None

    def prepare_ahead(self, job: ScoreJob) -> None:  # noqa: B027 - optional hook
        """Called as ``job`` is queued, before its batch starts: a backend may start the job's CPU
        work here (on its own threads; this must not block), so it overlaps the batches before it.
        Default: nothing, the work happens in :meth:`generate`."""

    def runner(self, *, max_batch_size: int, max_wait_ms: float, name: str) -> JobRunner[ScoreJob, str]:
        """How the server hands this backend its jobs: a :class:`.batching.DynamicBatcher`.

        Concurrent jobs share one :meth:`generate` call, never two at once; a job whose
        answer nobody waits for gets its ``cancelled`` event set. The backend, not the server,
        chooses its runner: it alone knows whether its engine batches by itself
        (:class:`~vlm_reward.backends.async_base.AsyncRewardBackend` answers a
        :class:`~vlm_reward.backends.continuous.ContinuousRunner`).
        """
        return DynamicBatcher(
            self.generate,
            max_batch_size=max_batch_size,
            max_wait_ms=max_wait_ms,
            name=name,
            cancel=lambda job: job.cancelled.set(),
            on_submit=self.prepare_ahead,
        )

    def close(self) -> None:  # noqa: B027 - optional hook, most backends need nothing
        """Release the model (called once at server shutdown)."""


_REGISTRY: dict[str, type[RewardBackend]] = {}
_ALIASES: dict[str, str] = {}


def register_backend(cls: type[RewardBackend]) -> type[RewardBackend]:
    """Class decorator: make ``cls`` available under ``cls.name`` and its aliases."""
    for key in (cls.name, *cls.aliases):
        owner = _REGISTRY.get(key) or _REGISTRY.get(_ALIASES.get(key, ""))
        if owner is not None and owner is not cls:
            raise ValueError(f"backend name {key!r} is already registered by {owner.__name__}.")
    _REGISTRY[cls.name] = cls
    for alias in cls.aliases:
        _ALIASES[alias] = cls.name
    return cls


def canonical_name(name: str) -> str:
    """Map a name or alias to the registered name; ``ValueError`` naming the choices if unknown."""
    if name in _REGISTRY:
        return name
    if name in _ALIASES:
        return _ALIASES[name]
    raise ValueError(f"unknown backend {name!r}; valid names: {', '.join(available_backends())}.")


def resolve_backend(name: str) -> type[RewardBackend]:
    """The backend class registered under ``name`` (or an alias of it)."""
    return _REGISTRY[canonical_name(name)]


def available_backends() -> list[str]:
    """Every accepted name, registered names and aliases, sorted."""
    return sorted([*_REGISTRY, *_ALIASES])


def backend_aliases() -> dict[str, list[str]]:
    """Registered name -> its aliases (for ``GET /backends``)."""
    return {name: list(cls.aliases) for name, cls in sorted(_REGISTRY.items())}
