"""Continuous submission: every job goes to the engine the moment it arrives.

The :class:`~vlm_reward.backends.batching.JobRunner` for backends whose engine batches by itself
(:class:`~vlm_reward.backends.async_base.AsyncRewardBackend`, i.e. vLLM): no queue, no
batching window, no request waiting behind a batch that is already generating. What it
adds to the backend's own ``submit`` is the server's lifecycle: ``abandon`` cancels a job
(the engine aborts it), and ``close`` answers every job not yet answered with
:class:`~vlm_reward.backends.batching.BatcherClosedError` at once and cancels it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

from vlm_reward.backends.batching import BatcherClosedError, Reservation, mark_started

JobT = TypeVar("JobT")
ResultT = TypeVar("ResultT")


class ContinuousRunner(Generic[JobT, ResultT]):
    """Hands each job straight to ``submit`` (which starts it and returns a cancellable future).

    Callers get a future of their own, chained to the engine's: the runner can then answer
    it at shutdown (503) while the engine's is being cancelled.
    """

    def __init__(self, submit: Callable[[JobT], Future[ResultT]], *, name: str = "backend") -> None:
        self._submit = submit
        self.name = name
        self._lock = threading.Lock()
        self._live: dict[Future[ResultT], Future[ResultT]] = {}  # caller's future -> engine's
        self._closed = False

    queued = 0  # a metric: jobs never wait in this runner (the engine's own queue is not visible)

    @property
    def running(self) -> int:
        """Jobs handed to the engine and not yet answered."""
        return len(self._live)

    def reserve(self) -> Reservation[JobT, ResultT]:
        """A ticket (nothing waits for it here: jobs are not batched by the runner)."""
        with self._lock:
            self._raise_if_closed()
        return Reservation(self.submit, lambda: None)

    def submit(self, job: JobT) -> Future[ResultT]:
        """Start ``job`` in the engine now."""
        out: Future[ResultT] = Future()
        out.set_running_or_notify_cancel()
        mark_started(out, time.perf_counter())  # the engine queues it; its wait is model time here
        with self._lock:
            self._raise_if_closed()
            inner = self._submit(job)
            self._live[out] = inner
        inner.add_done_callback(lambda done: self._deliver(out, done))
        return out

    def abandon(self, future: Future[ResultT]) -> None:
        """Cancel the job behind ``future`` (its engine request is aborted)."""
        with self._lock:
            inner = self._live.pop(future, None)
        if inner is not None:
            inner.cancel()

    def close(self, timeout: float | None = None) -> None:
        """Answer every live job with ``BatcherClosedError`` and cancel it (idempotent).

        ``timeout`` is unused: cancellation is asynchronous and the backend's ``close``
        stops the engine.
        """
        closed = BatcherClosedError(f"the server is shutting down; the job for {self.name!r} was stopped.")
        with self._lock:
            self._closed = True
            live, self._live = list(self._live.items()), {}
            for out, _ in live:
                _settle(out, exception=closed)
        for _, inner in live:
            inner.cancel()

    def _raise_if_closed(self) -> None:
        if self._closed:
            raise BatcherClosedError(f"the runner for {self.name!r} is closed (server shutting down).")

    def _deliver(self, out: Future[ResultT], inner: Future[ResultT]) -> None:
        """Copy the engine's outcome to the caller's future, unless shutdown answered it first."""
        if inner.cancelled():
            result, exception = None, BatcherClosedError("the job was cancelled.")
        else:
            exception = inner.exception()
            result = None if exception is not None else inner.result()
        with self._lock:  # close() settles under the same lock: one answer per future
            self._live.pop(out, None)
            _settle(out, result=result, exception=exception)


def _settle(
    future: Future[ResultT], *, result: ResultT | None = None, exception: BaseException | None = None
) -> None:
    if future.done():
        return
    if exception is not None:
        future.set_exception(exception)
    else:
        future.set_result(result)  # type: ignore[arg-type]
