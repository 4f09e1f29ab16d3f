"""The reward server's logic, independent of the HTTP framework (no request or response types).

:class:`RewardService` scores one request end to end: check it against the server's caps
(:mod:`vlm_reward.server.limits`), resolve the backend and admit the request in one step
(:meth:`~vlm_reward.server.backend_slot.BackendSlot.admit`: ready, budget, score mode, frames),
read the video once (:mod:`vlm_reward.server.video_source`), hand the job to the backend's
runner (a :class:`~vlm_reward.backends.batching.DynamicBatcher`, or a
:class:`~vlm_reward.backends.continuous.ContinuousRunner` for engines that batch themselves),
wait for the answer unless the client leaves, and read it: a probability as is, text through
:func:`vlm_reward.judging.parsing.parse_score` (the job's trip: :mod:`vlm_reward.server.job`). It
raises the exceptions that :func:`vlm_reward.errors.error_response` maps to statuses; the app only
translates.

A backend is constructed with the service (cheap: bad ``--backend-kwargs`` fail at the
command line) and loaded in a background thread (:meth:`RewardService.start`), so
``/health`` answers 503 while the weights load.

With ``--self-test`` the loader thread then scores the labelled episodes of the self-test set
through :meth:`RewardService._score` itself (the videos sent inline, as a client may), grades
them (:func:`vlm_reward.server.self_test.grade`) and lets the slot serve, or refuse for good.

A SIGTERM drains rather than drops (:meth:`RewardService.begin_drain`, then
:meth:`RewardService.drain`): new requests get 503 ``shutting_down`` at once, the jobs
already admitted run to their answer within the drain timeout, and only those still
unfinished then get 503 (:meth:`RewardService.shutdown`). When a :class:`ServerMetrics` is
attached, each job's video decode, queue wait and model time are observed here.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from vlm_reward.backends import (
    ProbabilityAnswer,
    ScoreJob,
    available_backends,
    backend_aliases,
    canonical_name,
    resolve_backend,
)
from vlm_reward.backends.batching import BatcherClosedError, started_at
from vlm_reward.errors import (
    BackendError,
    BackendNotLoadedError,
    ClientDisconnectedError,
    ServerShuttingDownError,
    UnknownBackendError,
    error_response,
)
from vlm_reward.protocol import BackendsResponse, HealthResponse, ScoreRequest, ScoreResponse
from vlm_reward.server.backend_slot import Admission, BackendSlot, check_default_budget
from vlm_reward.server.config import ServerConfig
from vlm_reward.server.job import await_answer, make_job, read_answer
from vlm_reward.server.metrics import ServerMetrics
from vlm_reward.server.self_test import grade, load_self_test, score_cases
from vlm_reward.server.video_source import VideoPolicy, prepare_video

logger = logging.getLogger("vlm_reward.server")


class RewardService:
    """The server's logic; one per app."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.limits = config.limits
        self.default_backend = canonical_name(config.backend)
        backend = resolve_backend(self.default_backend)(config.model, **config.backend_kwargs)
        backend.check_model()  # a missing or unsupported checkpoint fails here, before listening
        check_default_budget(self.default_backend, backend, self.limits)
        self.slots = {self.default_backend: BackendSlot(self.default_backend, backend, config)}
        self.video_policy = VideoPolicy.create(config.video_root, self.limits)
        # A bad self-test set fails here, before the server listens (ValueError).
        self.self_test_cases = (
            None if config.self_test is None else load_self_test(config.self_test.directory)
        )
        self._loader: threading.Thread | None = None
        self.metrics: ServerMetrics | None = None
        self.draining = False
        self.active = 0  # score() calls admitted and not yet answered (what a drain waits for)

    def start(self) -> None:
        """Begin loading the backends in the background so ``/health`` answers meanwhile."""
        slots = list(self.slots.values())

        def load() -> None:
            for slot in slots:
                slot.load()
            self.run_self_test()

        self._loader = threading.Thread(target=load, name="backend-loader", daemon=True)
        self._loader.start()

    def run_self_test(self) -> None:
        """Score the self-test set on the default backend once it loaded, and let it serve or not."""
        slot = self.slots[self.default_backend]
        if self.self_test_cases is None or slot.state != "self_testing":
            return
        settings, cases = self.config.self_test, self.self_test_cases
        logger.info("self-test: scoring %d labelled episodes from %s", len(cases), settings.directory)

        async def score(request: ScoreRequest) -> ScoreResponse:
            return await self._score(request, None, None, self_test=True)

        outcomes = asyncio.run(score_cases(cases, score, self.limits.max_nframes, settings.request))
        report = grade(cases, outcomes, settings.threshold, settings.tolerance)
        (logger.info if report.passed else logger.error)("%s", report.summary())
        slot.finish_self_test(report.passed, report.summary())

    def shutdown(self) -> None:
        """Answer every queued and running job 503 and release the backends (idempotent)."""
        self.draining = True
        for slot in self.slots.values():
            slot.close()

    def begin_drain(self) -> None:
        """Take no new work: from now on ``/score`` and ``/health`` answer 503 ``shutting_down``."""
        self.draining = True
        if self.metrics is not None:
            self.metrics.draining.set(1)

    async def drain(self, timeout_s: float) -> bool:
        """Wait until every admitted request is answered, at most ``timeout_s``; True if all were."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while self.active > 0 and loop.time() < deadline:
            await asyncio.sleep(0.02)
        return self.active == 0

    def runner_states(self) -> list[tuple[str, Any, str]]:
        """(name, runner or ``None``, state) per hosted backend, for the metrics gauges."""
        return [(name, slot.runner, slot.state) for name, slot in self.slots.items()]

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
        self,
        req: ScoreRequest,
        client_gone: asyncio.Future[Any] | None = None,
        on_backend: Callable[[str], None] | None = None,
    ) -> ScoreResponse:
        """Score one request end to end; raises the errors :func:`error_response` maps.

        ``client_gone`` resolves when the client disconnects: a queued job is then dropped
        and a running one cancelled (``ClientDisconnectedError``), so a client that timed
        out does not keep the model busy for nobody while later requests wait behind it.
        ``on_backend(name)`` is called once the request's backend is known, before it is
        admitted (the app labels the request's log line and metrics with it, errors included).
        """
        if self.draining:
            raise ServerShuttingDownError("the server is shutting down; retry on another server or later.")
        self.active += 1
        try:
            return await self._score(req, client_gone, on_backend)
        finally:
            self.active -= 1

    async def _score(
        self,
        req: ScoreRequest,
        client_gone: asyncio.Future[Any] | None,
        on_backend: Callable[[str], None] | None,
        self_test: bool = False,
    ) -> ScoreResponse:
        start = time.perf_counter()
        self.limits.check_request(
            nframes=req.nframes,
            max_pixels=req.max_pixels,
            task_text=req.task_text,
            backend_kwargs=req.backend_kwargs,
        )
        slot = self.slot_for(req.backend)
        if on_backend is not None:
            on_backend(slot.name)
        admitted = slot.admit(req.nframes, req.backend_kwargs, req.score_mode, self.limits, self_test)
        answer = await self._generate(admitted, req, client_gone)
        prompt = admitted.prompt
        return ScoreResponse(
            **read_answer(answer, admitted.score_mode, admitted.backend),
            backend=admitted.backend,
            model=admitted.model,
            latency_s=round(time.perf_counter() - start, 6),
            score_mode=admitted.score_mode,
            prompt_preset=None if prompt is None else prompt.preset,
            prompt_hash=None if prompt is None else prompt.fingerprint,
        )

    async def _generate(
        self, admitted: Admission, req: ScoreRequest, client_gone: asyncio.Future[Any] | None
    ) -> str | ProbabilityAnswer:
        backend, runner, mode = admitted.backend, admitted.runner, admitted.score_mode
        try:
            # Reserve before the video is validated: the runner then knows a job is coming.
            with runner.reserve() as reservation:
                decode_start = time.perf_counter()
                video = await asyncio.to_thread(
                    prepare_video, req.video_path, req.video_b64, self.video_policy, admitted.frames
                )
                submitted = time.perf_counter()
                job = make_job(req, video, mode)
                try:
                    future = reservation.submit(job)
                except BaseException:
                    video.cleanup()
                    raise
        except BatcherClosedError:
            raise ServerShuttingDownError(
                "the server is shutting down; retry on another server or later."
            ) from None
        self._observe("decode", backend, submitted - decode_start)
        try:
            text = await await_answer(runner, future, client_gone)
        except ClientDisconnectedError:
            self._aborted(backend, "client_disconnected")
            raise
        except (BatcherClosedError, ServerShuttingDownError):
            self._aborted(backend, "shutting_down")
            raise ServerShuttingDownError("the server shut down before the job finished; retry.") from None
        except Exception as exc:
            raise BackendError(backend, exc) from exc
        finally:
            video.cleanup()
            self._count_tokens(backend, job)
        self._observe_generation(backend, future, submitted)
        expected = ProbabilityAnswer if mode == "probability" else str
        if not isinstance(text, expected):
            problem = (
                f"generate returned {type(text).__name__} for score_mode {mode!r}, not {expected.__name__}"
            )
            raise BackendError(backend, RuntimeError(problem))
        return text

    def _observe(self, what: str, backend: str, seconds: float) -> None:
        if self.metrics is not None:
            histogram = {"decode": self.metrics.decode, "queue": self.metrics.queue_wait}.get(what)
            (histogram or self.metrics.model_time).labels(backend).observe(max(seconds, 0.0))

    def _observe_generation(self, backend: str, future: Future[Any], submitted: float) -> None:
        """Queue wait (submit -> start) and model time (start -> answer) of a finished job."""
        started = started_at(future) or submitted
        self._observe("queue", backend, started - submitted)
        self._observe("model", backend, time.perf_counter() - started)

    def _count_tokens(self, backend: str, job: ScoreJob) -> None:
        """Add what the backend recorded in ``job.usage`` (zeros if it counted nothing)."""
        if self.metrics is not None:
            self.metrics.prompt_tokens.labels(backend).inc(job.usage.prompt)
            self.metrics.generated_tokens.labels(backend).inc(job.usage.generated)

    def _aborted(self, backend: str, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.aborted.labels(backend, reason).inc()

    def health(self) -> tuple[int, dict[str, Any]]:
        """200 once the backend serves; 503 with the reason (loading, failed, draining) otherwise."""
        if self.draining:
            return error_response(
                ServerShuttingDownError("the server is shutting down; retry on another server or later.")
            )
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
