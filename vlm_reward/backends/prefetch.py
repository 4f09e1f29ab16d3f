"""A job's CPU work done on worker threads from the moment it is queued, not when its batch starts.

A batching backend used to do each job's CPU steps (frames resized, prompt rendered, processor
run) one job after another inside its batch's ``generate`` call, while the model waited, and the
model stood still while they ran. :class:`Prefetcher` starts a job's preparation on a small pool
as soon as the server queues it (:meth:`~vlm_reward.backends.base.RewardBackend.prepare_ahead`),
so the jobs of a batch are prepared in parallel with each other and with the batch the model is
running; ``generate`` then :meth:`~Prefetcher.take` s each job's result, waiting only for what is
not done yet, or preparing it in its own thread when nothing started it (offline use, tests).

Each worker thread gets its own state from ``make_state`` (the backend: its own copy of the HF
processor, whose fast tokenizer must not be used from two threads at once). Nothing is cached
by content: a result is kept only until its job takes it, or until the job object is gone (a
request abandoned while queued), so memory follows the queue, not the traffic.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

JobT = TypeVar("JobT")
PreparedT = TypeVar("PreparedT")


class Prefetcher(Generic[JobT, PreparedT]):
    """Runs ``prepare(job, state)`` for queued jobs on ``workers`` threads (see the module docstring).

    ``state`` is the calling thread's own object from ``make_state()``, made on its first use.
    Jobs are told apart by identity and must support weak references (dataclasses do).
    """

    def __init__(
        self,
        prepare: Callable[[JobT, Any], PreparedT],
        make_state: Callable[[], Any],
        *,
        workers: int,
        name: str = "prefetch",
    ) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be an integer >= 1, got {workers!r}.")
        self._prepare = prepare
        self._make_state = make_state
        self._local = threading.local()
        self._lock = threading.Lock()
        self._pending: dict[int, Future[PreparedT]] = {}
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self.workers = workers

    @property
    def pending(self) -> int:
        """Jobs started and not taken yet (a snapshot)."""
        return len(self._pending)

    def start(self, job: JobT) -> None:
        """Begin preparing ``job`` on the pool (once; a second call does nothing)."""
        key = id(job)
        with self._lock:
            if key in self._pending:
                return
            future = self._pool.submit(self._run, job)
            self._pending[key] = future
        # A job dropped before its batch (its request abandoned) takes its result with it.
        weakref.finalize(job, self._forget, key, future)

    def take(self, job: JobT) -> PreparedT:
        """``job``'s prepared result, waiting for it if it is still running; prepared here and now
        when it was never started. Raises what ``prepare`` raised."""
        with self._lock:
            future = self._pending.pop(id(job), None)
        if future is None:
            return self._run(job)
        return future.result()

    def close(self) -> None:
        """Stop the pool after the preparations already running (queued ones are dropped)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            self._pending.clear()

    def _run(self, job: JobT) -> PreparedT:
        state = getattr(self._local, "state", None)
        if state is None:
            state = self._local.state = self._make_state()
        return self._prepare(job, state)

    def _forget(self, key: int, future: Future[PreparedT]) -> None:
        with self._lock:
            if self._pending.get(key) is future:
                del self._pending[key]
