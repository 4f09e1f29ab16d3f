"""Dynamic batching: requests that arrive close together share one ``generate`` call.

A video VLM on a GPU scores a batch of N episodes in far less than N times the cost of
one, and a training step sends one request per finished episode at nearly the same time.
:class:`DynamicBatcher` owns one worker thread per backend. The worker blocks for the
first job, then keeps collecting jobs for at most ``max_wait_ms`` (or until it has
``max_batch_size``), runs them as one ``generate(jobs)`` call and hands each caller its own
answer or its own exception. Having a single worker is also what guarantees a backend's
``generate`` is never called concurrently (the backend contract).

Callers get a :class:`concurrent.futures.Future`, so the batcher works from plain threads
(its unit tests) and from asyncio (``asyncio.wrap_future`` in the server) alike.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Generic, TypeVar

JobT = TypeVar("JobT")
ResultT = TypeVar("ResultT")

logger = logging.getLogger(__name__)

# Put on the queue by close(); everything queued before it is still served.
_STOP = object()


class BatcherClosedError(RuntimeError):
    """Raised by :meth:`DynamicBatcher.submit` after :meth:`DynamicBatcher.close`."""


class DynamicBatcher(Generic[JobT, ResultT]):
    """Collect concurrent jobs into batches for one ``generate`` function.

    ``generate(jobs)`` must return one entry per job, in order: a result, or an exception
    for a job that failed alone. If it raises, or returns the wrong number of entries,
    every job of that batch fails with that error.
    """

    def __init__(
        self,
        generate: Callable[[list[JobT]], Sequence[ResultT | BaseException]],
        *,
        max_batch_size: int = 8,
        max_wait_ms: float = 20.0,
        name: str = "backend",
    ) -> None:
        if isinstance(max_batch_size, bool) or not isinstance(max_batch_size, int) or max_batch_size < 1:
            raise ValueError(f"max_batch_size must be an integer >= 1, got {max_batch_size!r}.")
        if not max_wait_ms >= 0:
            raise ValueError(f"max_wait_ms must be >= 0, got {max_wait_ms!r}.")
        self._generate = generate
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_ms / 1000.0
        self.name = name
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"batcher-{name}", daemon=True)
        self._thread.start()

    def submit(self, job: JobT) -> Future[ResultT]:
        """Queue ``job``; the future resolves to its result or raises its own exception."""
        future: Future[ResultT] = Future()
        # The lock orders submit against close(): nothing can land behind the stop marker.
        with self._lock:
            if self._closed:
                raise BatcherClosedError(f"the batcher for {self.name!r} is closed (server shutting down).")
            self._queue.put((job, future))
        return future

    def close(self, timeout: float | None = None) -> None:
        """Stop accepting jobs, finish the queued ones, and join the worker (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._queue.put(_STOP)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            batch = [item]
            stop = self._collect(batch)
            self._run_batch(batch)
            if stop:
                return

    def _collect(self, batch: list[object]) -> bool:
        """Add jobs to ``batch`` until full or the wait window ends; True if close() was seen."""
        deadline = time.monotonic() + self.max_wait_s
        while len(batch) < self.max_batch_size:
            remaining = deadline - time.monotonic()
            try:
                # Past the deadline, still take what is already queued: it costs no waiting.
                item = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
            except queue.Empty:
                return False
            if item is _STOP:
                return True
            batch.append(item)
        return False

    def _run_batch(self, batch: list[object]) -> None:
        # A caller that gave up (cancelled future) is dropped before the model sees its job.
        live = [(job, fut) for job, fut in batch if fut.set_running_or_notify_cancel()]  # type: ignore[misc]
        if not live:
            return
        jobs = [job for job, _ in live]
        start = time.perf_counter()
        try:
            results = list(self._generate(jobs))
            if len(results) != len(jobs):
                raise RuntimeError(f"generate returned {len(results)} answers for {len(jobs)} jobs.")
        except Exception as exc:
            # No traceback here: every caller gets the exception and reports it.
            logger.warning("batch of %d failed in %r: %s", len(jobs), self.name, type(exc).__name__)
            for _, fut in live:
                fut.set_exception(exc)
            return
        logger.debug("batch of %d in %.3f s (%s)", len(jobs), time.perf_counter() - start, self.name)
        for (_, fut), result in zip(live, results, strict=True):
            if isinstance(result, BaseException):
                fut.set_exception(result)
            else:
                fut.set_result(result)
