"""Backends whose engine schedules requests itself (vLLM's continuous batching).

A batch-at-a-time backend makes a request that arrives while a batch generates wait for
the batch's longest answer. An engine with continuous batching adds each request to the
running batch at the next step instead, so the server should hand it every job the moment
the job's video is validated. :class:`AsyncRewardBackend` is that contract: one coroutine
per job (:meth:`AsyncRewardBackend.generate_one`); cancelling the coroutine (the client
left, the server is stopping) must stop the work, which for vLLM's ``AsyncLLM`` is an abort.

All coroutines of one backend run on one event loop in a daemon thread of its own
(:class:`LoopThread`), started by :meth:`AsyncRewardBackend.load`. Engine objects bound to
the loop they were created on (vLLM's output handler task) therefore always see the same
loop, whoever calls the backend: the server's request handlers, its loader thread, a test.
"""

from __future__ import annotations

import abc
import asyncio
import threading
from collections.abc import Coroutine, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from vlm_reward.backends.base import RewardBackend, ScoreJob
from vlm_reward.backends.batching import JobRunner
from vlm_reward.backends.continuous import ContinuousRunner

T = TypeVar("T")


class LoopThread:
    """An asyncio event loop running forever in a daemon thread, until :meth:`stop`."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Schedule ``coro`` on the loop; cancelling the returned future cancels the coroutine."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (from any other thread)."""
        return self.submit(coro).result(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop and join its thread (idempotent)."""
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)


class AsyncRewardBackend(RewardBackend):
    """A backend the server runs one job at a time each, concurrently, as jobs arrive.

    Subclasses implement :meth:`load_async` and :meth:`generate_one` (and may implement
    :meth:`close_async`); they run on the backend's own loop. ``generate`` (the batch
    contract) still works, for offline use and tests: it runs the jobs concurrently and
    waits for all of them.
    """

    def __init__(self, model: str, **backend_kwargs: Any) -> None:
        super().__init__(model, **backend_kwargs)
        self._loop: LoopThread | None = None

    @abc.abstractmethod
    async def load_async(self) -> None:
        """Load weights and start the engine (on the backend's loop)."""

    @abc.abstractmethod
    async def generate_one(self, job: ScoreJob) -> str:
        """The raw answer for one job; raise for a job that failed. Must stop when cancelled."""

    async def close_async(self) -> None:
        """Stop the engine (on the backend's loop)."""

    def load(self) -> None:
        """Start the backend's loop and run :meth:`load_async` on it."""
        self._loop = LoopThread(f"backend-{self.name}")
        try:
            self._loop.run(self.load_async())
        except BaseException:
            self._loop.stop()
            self._loop = None
            raise

    def submit(self, job: ScoreJob) -> Future[str]:
        """Start ``job`` now; cancelling the future cancels (aborts) it."""
        if self._loop is None:
            raise RuntimeError(f"backend {self.name!r} is not loaded; call load() first.")
        return self._loop.submit(self.generate_one(job))

    def generate(self, jobs: Sequence[ScoreJob]) -> list[str | Exception]:
        """All of ``jobs`` at once, each answer or exception in order."""
        futures = [self.submit(job) for job in jobs]
        results: list[str | Exception] = []
        for future in futures:
            try:
                results.append(future.result())
            except Exception as exc:
                results.append(exc)
        return results

    def runner(self, *, max_batch_size: int, max_wait_ms: float, name: str) -> JobRunner[ScoreJob, str]:
        """A :class:`~vlm_reward.backends.continuous.ContinuousRunner`: every job goes to the engine at once.

        ``max_batch_size`` and ``max_wait_ms`` do not apply: the engine batches (vLLM's
        ``max_num_seqs`` bounds how many run together).
        """
        return ContinuousRunner(self.submit, name=name)

    def close(self) -> None:
        """Run :meth:`close_async`, then stop the loop."""
        if self._loop is None:
            return
        try:
            self._loop.run(self.close_async(), timeout=60)
        finally:
            self._loop.stop()
            self._loop = None
