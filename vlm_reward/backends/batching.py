"""Dynamic batching: requests that arrive close together share one ``generate`` call.

A video VLM on a GPU scores a batch of N episodes in far less than N times the cost of
one, and a training step sends one request per finished episode at nearly the same time.
:class:`DynamicBatcher` owns one worker thread per backend, which is also what guarantees
that a backend's ``generate`` is never called concurrently (the backend contract).

When a batch starts. The worker takes the first queued job, then keeps collecting jobs
for at most ``max_wait_ms`` (or until it has ``max_batch_size``), but only while more jobs
are known to be on their way: a request takes a :meth:`DynamicBatcher.reserve` ticket
when it arrives, before its video is validated, and hands it in with its job. So the
burst of requests at the end of a chunk is batched, while a lone request on an idle server
starts at once instead of sitting out the window.

Work nobody waits for. :meth:`DynamicBatcher.abandon` drops a queued job, or asks the
backend to stop a running one through the ``cancel`` hook (the server sets the job's
cancel event, which backends check between tokens). :meth:`DynamicBatcher.close` answers
every queued and running job with :class:`BatcherClosedError` at once and cancels the
running ones, so a shutdown neither runs the queue to the end nor leaves callers hanging.

Callers get a :class:`concurrent.futures.Future`, so the batcher works from plain threads
(its unit tests) and from asyncio (``asyncio.wrap_future`` in the server) alike.

:class:`JobRunner` is what the server needs of any way of running jobs: this batcher for
backends that generate in batches, :class:`~vlm_reward.backends.continuous.ContinuousRunner` for
engines that schedule each request themselves (vLLM).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Generic, Protocol, TypeVar

JobT = TypeVar("JobT")
ResultT = TypeVar("ResultT")

logger = logging.getLogger(__name__)


def mark_started(future: Future[Any], when: float) -> None:
    """Record on ``future`` when its job started to generate (``time.perf_counter()``)."""
    future.started_at = when  # type: ignore[attr-defined]


def started_at(future: Future[Any]) -> float | None:
    """When ``future``'s job started to generate, if its runner recorded it."""
    return getattr(future, "started_at", None)


class BatcherClosedError(RuntimeError):
    """The runner was closed before the job was answered (the server is shutting down)."""


class Reservation(Generic[JobT, ResultT]):
    """A ticket saying "a job is on its way"; use it as a context manager around validation.

    :meth:`submit` hands in the job; leaving the ``with`` block without submitting (the
    request failed validation) releases the ticket, so the worker stops waiting for it.
    """

    def __init__(self, enqueue: Callable[[JobT], Future[ResultT]], release: Callable[[], None]) -> None:
        self._enqueue = enqueue
        self._release = release
        self._open = True

    def __enter__(self) -> Reservation[JobT, ResultT]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def submit(self, job: JobT) -> Future[ResultT]:
        """Queue ``job`` (consumes the ticket); the future resolves to its result or exception."""
        if not self._open:
            raise RuntimeError("this reservation was already used or released.")
        self._open = False
        return self._enqueue(job)

    def release(self) -> None:
        """Give the ticket back without a job (idempotent)."""
        if self._open:
            self._open = False
            self._release()


class JobRunner(Protocol[JobT, ResultT]):
    """How the server hands a backend its jobs (see the module docstring)."""

    def reserve(self) -> Reservation[JobT, ResultT]:
        """A ticket for a job that will be submitted soon; ``BatcherClosedError`` once closed."""
        ...

    def abandon(self, future: Future[ResultT]) -> None:
        """Nobody will read ``future``: drop or stop its job."""
        ...

    def close(self, timeout: float | None = None) -> None:
        """Answer every job not yet answered with ``BatcherClosedError``, stop the running ones."""
        ...


class DynamicBatcher(Generic[JobT, ResultT]):
    """Collect concurrent jobs into batches for one ``generate`` function.

    ``generate(jobs)`` must return one entry per job, in order: a result, or an exception
    for a job that failed alone. If it raises, or returns the wrong number of entries,
    every job of that batch fails with that error. ``cancel(job)``, if given, is called
    (from any thread) for a running job whose answer nobody will read. ``on_submit(job)``, if
    given, is called in the submitting thread as a job is queued, so the backend can start the
    job's CPU work while earlier batches run (it must not block; an error there is logged and
    the job still queued).
    """

    def __init__(
        self,
        generate: Callable[[list[JobT]], Sequence[ResultT | BaseException]],
        *,
        max_batch_size: int = 8,
        max_wait_ms: float = 20.0,
        name: str = "backend",
        cancel: Callable[[JobT], None] | None = None,
        on_submit: Callable[[JobT], None] | None = None,
    ) -> None:
        if isinstance(max_batch_size, bool) or not isinstance(max_batch_size, int) or max_batch_size < 1:
            raise ValueError(f"max_batch_size must be an integer >= 1, got {max_batch_size!r}.")
        if not max_wait_ms >= 0:
            raise ValueError(f"max_wait_ms must be >= 0, got {max_wait_ms!r}.")
        self._generate = generate
        self._cancel = cancel
        self._on_submit = on_submit
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_ms / 1000.0
        self.name = name
        # One lock guards the queue, the counters and every future's completion, so
        # close() and the worker never answer the same future twice.
        self._cond = threading.Condition()
        self._queue: deque[tuple[JobT, Future[ResultT]]] = deque()
        self._running: dict[Future[ResultT], JobT] = {}
        self._reserved = 0
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"batcher-{name}", daemon=True)
        self._thread.start()

    @property
    def queued(self) -> int:
        """Jobs waiting for a batch (a metric; read without the lock, it is a snapshot)."""
        return len(self._queue)

    @property
    def running(self) -> int:
        """Jobs in the batch that is generating now."""
        return len(self._running)

    def reserve(self) -> Reservation[JobT, ResultT]:
        """A ticket for a job that will be submitted soon (see :class:`Reservation`)."""
        with self._cond:
            self._raise_if_closed()
            self._reserved += 1
        return Reservation(lambda job: self._enqueue(job, reserved=True), self._unreserve)

    def submit(self, job: JobT) -> Future[ResultT]:
        """Queue ``job`` without a reservation; the future resolves to its result or exception."""
        return self._enqueue(job, reserved=False)

    def abandon(self, future: Future[ResultT]) -> None:
        """Nobody will read ``future``: drop its job if queued, else ask the backend to stop it."""
        with self._cond:
            if future.cancel():
                self._queue = deque(item for item in self._queue if item[1] is not future)
                return
            job = self._running.get(future)
        if job is not None and self._cancel is not None:
            self._cancel(job)

    def close(self, timeout: float | None = None) -> None:
        """Stop accepting jobs; answer queued and running ones with :class:`BatcherClosedError`.

        Running jobs are also cancelled (the ``cancel`` hook), so the worker is free after
        the backend's next check; the worker is joined for at most ``timeout`` seconds.
        Idempotent.
        """
        closed = BatcherClosedError(f"the server is shutting down; the job for {self.name!r} was not run.")
        with self._cond:
            if not self._closed:
                self._closed = True
                for _, future in self._queue:
                    if future.set_running_or_notify_cancel():
                        future.set_exception(closed)
                self._queue.clear()
                running = list(self._running.items())
                for future, _ in running:
                    if not future.done():
                        future.set_exception(closed)
                self._cond.notify_all()
            else:
                running = []
        for _, job in running:
            self._cancel_quietly(job)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    # ---- internals --------------------------------------------------------------------

    def _raise_if_closed(self) -> None:
        if self._closed:
            raise BatcherClosedError(f"the batcher for {self.name!r} is closed (server shutting down).")

    def _enqueue(self, job: JobT, *, reserved: bool) -> Future[ResultT]:
        if self._on_submit is not None and not self._closed:
            try:
                self._on_submit(job)
            except Exception:
                logger.exception("on_submit failed for a job of %r", self.name)
        future: Future[ResultT] = Future()
        with self._cond:
            if reserved:
                self._reserved -= 1
            self._raise_if_closed()
            self._queue.append((job, future))
            self._cond.notify_all()
        return future

    def _unreserve(self) -> None:
        with self._cond:
            self._reserved -= 1
            self._cond.notify_all()

    def _cancel_quietly(self, job: JobT) -> None:
        if self._cancel is None:
            return
        try:
            self._cancel(job)
        except Exception:
            logger.exception("cancelling a job of %r failed", self.name)

    def _run(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            if batch:
                self._run_batch(batch)

    def _next_batch(self) -> list[tuple[JobT, Future[ResultT]]] | None:
        """The next batch, marked running; ``None`` once closed. Cancelled jobs are left out."""
        with self._cond:
            while not self._queue and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            batch = [self._queue.popleft()]
            deadline = time.monotonic() + self.max_wait_s
            while len(batch) < self.max_batch_size:
                if self._queue:
                    batch.append(self._queue.popleft())
                    continue
                remaining = deadline - time.monotonic()
                # Wait only for jobs known to be on their way, and never past the window.
                if self._closed or self._reserved <= 0 or remaining <= 0:
                    break
                self._cond.wait(remaining)
            if self._closed:  # close() ran while we collected: it could not see these jobs
                for _, future in batch:
                    if future.set_running_or_notify_cancel():
                        future.set_exception(BatcherClosedError("the server is shutting down."))
                return None
            live = [(job, fut) for job, fut in batch if fut.set_running_or_notify_cancel()]
            self._running = {fut: job for job, fut in live}
            started = time.perf_counter()
            for _, fut in live:
                mark_started(fut, started)  # the server's queue-wait metric ends here
            return live

    def _run_batch(self, batch: list[tuple[JobT, Future[ResultT]]]) -> None:
        jobs = [job for job, _ in batch]
        start = time.perf_counter()
        try:
            results: list[ResultT | BaseException] = list(self._generate(jobs))
            if len(results) != len(jobs):
                raise RuntimeError(f"generate returned {len(results)} answers for {len(jobs)} jobs.")
        except Exception as exc:
            # No traceback here: every caller gets the exception and reports it.
            logger.warning("batch of %d failed in %r: %s", len(jobs), self.name, type(exc).__name__)
            results = [exc] * len(jobs)
        else:
            logger.debug("batch of %d in %.3f s (%s)", len(jobs), time.perf_counter() - start, self.name)
        with self._cond:
            self._running = {}
            for (_, future), result in zip(batch, results, strict=True):
                if future.done():  # answered by close() meanwhile
                    continue
                if isinstance(result, BaseException):
                    future.set_exception(result)
                else:
                    future.set_result(result)
