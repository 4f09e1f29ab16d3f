"""The reward server's logic, independent of the HTTP framework.

:class:`RewardService` scores one request end to end: check it against the server's caps
(:mod:`vlm_reward.limits`), resolve the backend, validate the video
(:mod:`vlm_reward.video_source`), queue the job on the backend's
:class:`~vlm_reward.batching.DynamicBatcher`, wait for the answer unless the client leaves,
and parse it (:func:`vlm_reward.parsing.parse_score`). It raises the exceptions that
:func:`vlm_reward.errors.error_response` maps to statuses; the app only translates.

A backend is constructed with the service (cheap: bad ``--backend-kwargs`` fail at the
command line) and loaded in a background thread (:meth:`RewardService.start`), so
``/health`` answers 503 while the weights load.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from vlm_reward.backends import (
    ProbabilityAnswer,
    ScoreJob,
    available_backends,
    backend_aliases,
    canonical_name,
    resolve_backend,
)
from vlm_reward.batching import BatcherClosedError, JobRunner
from vlm_reward.errors import (
    AnswerParseError,
    BackendError,
    BackendLoadFailedError,
    BackendLoadingError,
    BackendNotLoadedError,
    ClientDisconnectedError,
    InvalidRequestError,
    LimitExceededError,
    ServerShuttingDownError,
    UnknownBackendError,
    error_response,
    scrub,
)
from vlm_reward.limits import RequestLimits
from vlm_reward.parsing import ParsedScore, ScoreParseError, parse_score
from vlm_reward.protocol import BackendsResponse, HealthResponse, ScoreRequest, ScoreResponse
from vlm_reward.video_source import LocalVideo, VideoPolicy, prepare_video

logger = logging.getLogger("vlm_reward.server")

# The JSON around a video (task text, kwargs) is small; 1 MiB of slack on top of the
# base64-inflated video limit keeps the body limit from rejecting what the video limit allows.
_BODY_SLACK_BYTES = 1024 * 1024
# How long a shutdown waits for a cancelled generation to notice before releasing the model.
_CLOSE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ServerConfig:
    """Everything the server is started with (the CLI flags, validated)."""

    backend: str
    model: str
    backend_kwargs: dict[str, Any] = field(default_factory=dict)
    video_root: str = field(default_factory=tempfile.gettempdir)
    max_batch_size: int = 8
    max_wait_ms: float = 20.0
    limits: RequestLimits = field(default_factory=RequestLimits)

    @property
    def max_body_bytes(self) -> int:
        """Largest request body: the video limit after base64 (4/3) plus JSON slack."""
        return int(self.limits.max_video_mb * 1024 * 1024 * 4 / 3) + _BODY_SLACK_BYTES


def model_display_name(model: str) -> str:
    """What responses call the model: a local checkpoint's directory name, else the id as given.

    Responses must not reveal host paths, and the directory name is what people call it.
    """
    if os.path.isabs(model):
        return os.path.basename(os.path.normpath(model)) or model
    return model


class BackendSlot:
    """One hosted backend: its instance, load state and runner.

    ``state`` goes ``loading`` -> ``ready`` or ``failed``; it is written by the loader
    thread and read by request handlers (single attribute writes, and the runner is set
    before the state says ``ready``).
    """

    def __init__(self, name: str, backend: Any, config: ServerConfig) -> None:
        self.name = name
        self.backend = backend
        self.model = model_display_name(config.model)
        self.state = "loading"
        self.error: str | None = None
        self.runner: JobRunner[ScoreJob, str] | None = None
        self._config = config
        self._closing = False

    def load(self) -> None:
        """Load the weights (slow) and start the runner; failures are recorded, not raised."""
        start = time.perf_counter()
        try:
            self.backend.load()
            # The checkpoint may bring its own default budget (transformers' generation config).
            check_default_budget(self.name, self.backend, self._config.limits)
        except Exception as exc:
            logger.exception("backend %r failed to load", self.name)
            self.error = f"{type(exc).__name__}: {scrub(str(exc))}"
            self.state = "failed"
            return
        if self._closing:  # the server stopped while the weights loaded
            self._close_backend()
            return
        self.runner = self.backend.runner(
            max_batch_size=self._config.max_batch_size, max_wait_ms=self._config.max_wait_ms, name=self.name
        )
        self.state = "ready"
        logger.info("backend %r loaded in %.1f s", self.name, time.perf_counter() - start)

    def require_ready(self) -> JobRunner[ScoreJob, str]:
        """The runner, or ``BackendNotLoadedError`` saying why there is none yet."""
        if self._closing:
            raise ServerShuttingDownError("the server is shutting down; retry on another server or later.")
        if self.state == "ready" and self.runner is not None:
            return self.runner
        if self.state == "failed":
            raise BackendLoadFailedError(f"backend {self.name!r} failed to load: {self.error}")
        raise BackendLoadingError(
            f"backend {self.name!r} is still loading; retry when GET /health returns 200."
        )

    def score_mode(self, requested: str | None) -> str:
        """The request's score mode (default: the backend's); 400 if this backend cannot serve it."""
        mode = requested or self.backend.default_score_mode
        if mode not in self.backend.score_modes:
            raise InvalidRequestError(
                f"backend {self.name!r} cannot score with score_mode {mode!r}; "
                f"its modes: {', '.join(self.backend.score_modes)}."
            )
        return mode

    def check_budget(self, backend_kwargs: Mapping[str, Any], limits: RequestLimits) -> None:
        """422 if a request's generation budget is above ``--max-new-tokens``; 400 for bad kwargs."""
        try:
            budget = self.backend.token_budget(backend_kwargs)
        except (ValueError, TypeError) as exc:
            raise BackendError(self.name, exc) from exc
        limits.check_token_budget(budget)

    def close(self) -> None:
        """Answer queued and running jobs 503 at once (cancelling the running), then release the model."""
        if self._closing:
            return
        self._closing = True
        if self.runner is not None:
            self.runner.close(timeout=_CLOSE_TIMEOUT_S)
        self._close_backend()

    def _close_backend(self) -> None:
        try:
            self.backend.close()
        except Exception:
            logger.exception("closing backend %r failed", self.name)


def check_default_budget(name: str, backend: Any, limits: RequestLimits) -> None:
    """``ValueError`` if a request with no budget of its own would be above ``--max-new-tokens``."""
    budget = backend.token_budget({})
    if budget is None:
        logger.info("backend %r does not report token budgets; --max-new-tokens is not enforced", name)
        return
    try:
        limits.check_token_budget(budget, where=f"the default generation budget of backend {name!r}")
    except LimitExceededError as exc:
        raise ValueError(exc.message) from None


class RewardService:
    """The server's logic; one per app."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.limits = config.limits
        self.default_backend = canonical_name(config.backend)
        backend = resolve_backend(self.default_backend)(config.model, **config.backend_kwargs)
        check_default_budget(self.default_backend, backend, self.limits)
        self.slots = {self.default_backend: BackendSlot(self.default_backend, backend, config)}
        self.video_policy = VideoPolicy.create(config.video_root, self.limits)
        self._loader: threading.Thread | None = None

    def start(self) -> None:
        """Begin loading the backends in the background so ``/health`` answers meanwhile."""
        slots = list(self.slots.values())
        self._loader = threading.Thread(
            target=lambda: [slot.load() for slot in slots], name="backend-loader", daemon=True
        )
        self._loader.start()

    def shutdown(self) -> None:
        """Answer every queued and running job 503 and release the backends (idempotent)."""
        for slot in self.slots.values():
            slot.close()

    def slot_for(self, requested: str | None) -> BackendSlot:
        """The hosted slot for a requested name or alias (``None``: the default)."""
        if requested is None:
            return self.slots[self.default_backend]
        try:
            name = canonical_name(requested)
        except ValueError:
            raise UnknownBackendError(
                f"unknown backend {requested!r}; valid names: {', '.join(available_backends())}."
            ) from None
        if name not in self.slots:
            raise BackendNotLoadedError(
                f"backend {name!r} is registered but this server did not load it (it serves "
                f"{self.default_backend!r}); start a server with --backend {name}."
            )
        return self.slots[name]

    async def score(
        self, req: ScoreRequest, request_state: Any = None, client_gone: asyncio.Future[Any] | None = None
    ) -> ScoreResponse:
        """Score one request end to end; raises the errors :func:`error_response` maps.

        ``client_gone`` resolves when the client disconnects: a queued job is then dropped
        and a running one cancelled (``ClientDisconnectedError``), so a client that timed
        out does not keep the model busy for nobody while later requests wait behind it.
        """
        start = time.perf_counter()
        self.limits.check_request(
            nframes=req.nframes,
            max_pixels=req.max_pixels,
            task_text=req.task_text,
            backend_kwargs=req.backend_kwargs,
        )
        slot = self.slot_for(req.backend)
        if request_state is not None:
            request_state.backend = slot.name
        runner = slot.require_ready()
        slot.check_budget(req.backend_kwargs, self.limits)
        mode = slot.score_mode(req.score_mode)
        answer = await self._generate(slot, runner, req, mode, client_gone)
        return ScoreResponse(
            **_read_answer(answer, mode, slot.name),
            backend=slot.name,
            model=slot.model,
            latency_s=round(time.perf_counter() - start, 6),
        )

    async def _generate(
        self,
        slot: BackendSlot,
        runner: JobRunner[ScoreJob, str],
        req: ScoreRequest,
        mode: str,
        client_gone: asyncio.Future[Any] | None,
    ) -> str | ProbabilityAnswer:
        try:
            # Reserve before the video is validated: the runner then knows a job is coming.
            with runner.reserve() as reservation:
                video = await asyncio.to_thread(
                    prepare_video,
                    req.video_path,
                    req.video_b64,
                    self.video_policy,
                    lambda total: slot.backend.frame_indices(total, req.nframes),
                )
                try:
                    future = reservation.submit(_job(req, video, mode))
                except BaseException:
                    video.cleanup()
                    raise
        except BatcherClosedError:
            raise ServerShuttingDownError(
                "the server is shutting down; retry on another server or later."
            ) from None
        try:
            text = await _await_answer(runner, future, client_gone)
        except (ClientDisconnectedError, ServerShuttingDownError):
            raise
        except BatcherClosedError:
            raise ServerShuttingDownError("the server shut down before the job finished; retry.") from None
        except Exception as exc:
            raise BackendError(slot.name, exc) from exc
        finally:
            video.cleanup()
        expected = ProbabilityAnswer if mode == "probability" else str
        if not isinstance(text, expected):
            problem = (
                f"generate returned {type(text).__name__} for score_mode {mode!r}, not {expected.__name__}"
            )
            raise BackendError(slot.name, RuntimeError(problem))
        return text

    def health(self) -> tuple[int, dict[str, Any]]:
        """200 with the serving backend once it is ready; 503 with the reason (loading/failed) before."""
        slot = self.slots[self.default_backend]
        try:
            slot.require_ready()
        except BackendNotLoadedError as exc:
            return error_response(exc)
        body = HealthResponse(
            backend=slot.name,
            model=slot.model,
            max_batch_size=self.config.max_batch_size,
            limits=self.limits.as_dict(),
        )
        return 200, body.model_dump()

    def backends(self) -> BackendsResponse:
        """Registered names and aliases, and what this server hosts."""
        aliases = backend_aliases()
        return BackendsResponse(
            default=self.default_backend,
            backends=sorted(aliases),
            aliases=aliases,
            loaded=[name for name, slot in self.slots.items() if slot.state == "ready"],
            states={name: slot.state for name, slot in self.slots.items()},
        )


def _job(req: ScoreRequest, video: LocalVideo, mode: str) -> ScoreJob:
    return ScoreJob(
        task_text=req.task_text,
        video_path=video.path,
        clip=video.clip,
        score_mode=mode,
        nframes=req.nframes,
        max_pixels=req.max_pixels,
        video_fps=req.video_fps,
        backend_kwargs=dict(req.backend_kwargs),
    )


async def _await_answer(
    runner: JobRunner[ScoreJob, str], future: Future[str], client_gone: asyncio.Future[Any] | None
) -> str:
    """``future``'s answer, unless the client disconnects (or the handler is cancelled) first.

    Then the job is abandoned: dropped if still queued, cancelled if generating.
    """
    answer = asyncio.wrap_future(future)
    waiting = {answer} if client_gone is None else {answer, client_gone}
    try:
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        _abandon(runner, future, answer)
        raise
    if not answer.done():
        _abandon(runner, future, answer)
        raise ClientDisconnectedError(
            "the client disconnected before its score was ready; its job was stopped."
        )
    return answer.result()


def _abandon(runner: JobRunner[ScoreJob, str], future: Future[str], answer: asyncio.Future[str]) -> None:
    # Cancelling the asyncio side first means a late answer is dropped silently rather than
    # logged as an exception nobody retrieved.
    answer.cancel()
    runner.abandon(future)


def _read_answer(answer: str | ProbabilityAnswer, mode: str, backend: str) -> dict[str, Any]:
    """The response's judgement fields: from a probability as is, from text by parsing it."""
    if isinstance(answer, ProbabilityAnswer):
        p = answer.probability
        return {"score": p, "raw_value": p, "answer": answer.answer, "think": None, "probability": p}
    parsed = _parse_answer(answer, mode, backend)
    return {
        "score": parsed.score,
        "raw_value": parsed.raw_value,
        "answer": parsed.answer,
        "think": parsed.think,
    }


def _parse_answer(text: str, mode: str, backend: str) -> ParsedScore:
    """The parsed answer, or ``AnswerParseError`` (502) carrying the answer text."""
    try:
        return parse_score(text, mode)
    except ScoreParseError as exc:
        raise AnswerParseError(
            f"backend {backend!r} answered but no score could be read ({exc}) "
            f"with score_mode={mode!r}; full answer: {text!r}"
        ) from None
