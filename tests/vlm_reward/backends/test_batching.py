"""Unit tests for vlm_reward.backends.batching.DynamicBatcher, driven from plain threads (fast)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor

import pytest

from vlm_reward.backends.batching import BatcherClosedError, DynamicBatcher


class RecordingGenerate:
    """A ``generate`` that doubles ints, records its batches, and can fail or block on demand."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.batches: list[list[int]] = []
        self.delay_s = delay_s
        self.active = 0
        self.max_active = 0
        self.release = threading.Event()
        self.release.set()
        self._lock = threading.Lock()

    def __call__(self, jobs: list[int]) -> Sequence[int | BaseException]:
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            self.release.wait(5)
            time.sleep(self.delay_s)
            self.batches.append(list(jobs))
            return [ValueError(f"bad job {j}") if j < 0 else 2 * j for j in jobs]
        finally:
            with self._lock:
                self.active -= 1


@pytest.fixture
def make_batcher() -> Callable[..., DynamicBatcher[int, int]]:
    """Build batchers that are always closed at the end of the test."""
    made: list[DynamicBatcher[int, int]] = []

    def make(generate: Callable[[list[int]], Sequence[int | BaseException]], **kwargs: object):
        batcher: DynamicBatcher[int, int] = DynamicBatcher(generate, **kwargs)  # type: ignore[arg-type]
        made.append(batcher)
        return batcher

    yield make
    for batcher in made:
        batcher.close(timeout=5)


def submit_burst(batcher: DynamicBatcher[int, int], jobs: Sequence[int]) -> list[Future[int]]:
    """Submit ``jobs`` the way the server does for a burst: every request reserves on arrival."""
    tickets = [batcher.reserve() for _ in jobs]
    return [ticket.submit(job) for ticket, job in zip(tickets, jobs, strict=True)]


def test_jobs_submitted_together_share_one_generate_call(make_batcher) -> None:
    gen = RecordingGenerate()
    batcher = make_batcher(gen, max_batch_size=8, max_wait_ms=2000)
    futures = submit_burst(batcher, range(8))
    assert [f.result(timeout=5) for f in futures] == [2 * j for j in range(8)]
    assert gen.batches == [list(range(8))]


def test_batches_are_capped_at_max_batch_size_and_keep_order(make_batcher) -> None:
    gen = RecordingGenerate()
    batcher = make_batcher(gen, max_batch_size=4, max_wait_ms=2000)
    futures = submit_burst(batcher, range(10))
    assert [f.result(timeout=5) for f in futures] == [2 * j for j in range(10)]
    assert gen.batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_a_lone_job_on_an_idle_batcher_does_not_wait_for_the_window(make_batcher) -> None:
    gen = RecordingGenerate()
    batcher = make_batcher(gen, max_batch_size=8, max_wait_ms=10_000)
    start = time.monotonic()
    assert batcher.submit(1).result(timeout=5) == 2
    assert time.monotonic() - start < 5  # a wait would take the 10 s window


def test_the_worker_waits_for_reserved_jobs_within_the_window(make_batcher) -> None:
    gen = RecordingGenerate()
    batcher = make_batcher(gen, max_batch_size=8, max_wait_ms=10_000)
    first, second = batcher.reserve(), batcher.reserve()
    early = first.submit(1)
    time.sleep(0.2)  # the second request is still "validating its video"
    late = second.submit(2)
    assert (early.result(timeout=5), late.result(timeout=5)) == (2, 4)
    assert gen.batches == [[1, 2]]


def test_a_released_reservation_ends_the_wait(make_batcher) -> None:
    gen = RecordingGenerate()
    batcher = make_batcher(gen, max_batch_size=8, max_wait_ms=10_000)
    with batcher.reserve() as good, batcher.reserve():  # the second request fails validation
        future = good.submit(1)
    assert future.result(timeout=5) == 2
    assert gen.batches == [[1]]
    with pytest.raises(RuntimeError, match="already used"):
        good.submit(3)


def test_job_after_the_wait_window_goes_into_a_new_batch(make_batcher) -> None:
    gen = RecordingGenerate()
    batcher = make_batcher(gen, max_batch_size=8, max_wait_ms=20)
    assert batcher.submit(1).result(timeout=5) == 2
    time.sleep(0.1)
    assert batcher.submit(2).result(timeout=5) == 4
    assert gen.batches == [[1], [2]]


def test_zero_wait_still_takes_jobs_that_are_already_queued(make_batcher) -> None:
    gen = RecordingGenerate()
    gen.release.clear()  # hold the first batch so the next jobs queue up behind it
    batcher = make_batcher(gen, max_batch_size=8, max_wait_ms=0)
    first = batcher.submit(0)
    _wait_until(lambda: gen.active == 1)
    rest = [batcher.submit(j) for j in (1, 2, 3)]
    gen.release.set()
    assert [f.result(timeout=5) for f in (first, *rest)] == [0, 2, 4, 6]
    assert gen.batches == [[0], [1, 2, 3]]


def test_a_failing_job_fails_only_its_own_future(make_batcher) -> None:
    gen = RecordingGenerate()
    batcher = make_batcher(gen, max_batch_size=8, max_wait_ms=200)
    futures = {j: batcher.submit(j) for j in (1, -2, 3)}
    assert futures[1].result(timeout=5) == 2
    assert futures[3].result(timeout=5) == 6
    with pytest.raises(ValueError, match="bad job -2"):
        futures[-2].result(timeout=5)
    assert gen.batches == [[1, -2, 3]]


@pytest.mark.parametrize(
    ("generate", "error", "match"),
    [
        (lambda jobs: (_ for _ in ()).throw(RuntimeError("model crashed")), RuntimeError, "model crashed"),
        (lambda jobs: [1], RuntimeError, "returned 1 answers for 3 jobs"),
    ],
    ids=["generate-raises", "wrong-number-of-answers"],
)
def test_a_failing_batch_fails_every_job_in_it(make_batcher, generate, error, match) -> None:
    batcher = make_batcher(generate, max_batch_size=8, max_wait_ms=200)
    futures = [batcher.submit(j) for j in range(3)]
    for future in futures:
        with pytest.raises(error, match=match):
            future.result(timeout=5)


def test_worker_survives_a_failed_batch(make_batcher) -> None:
    calls: list[list[int]] = []

    def generate(jobs: list[int]) -> list[int]:
        calls.append(jobs)
        if len(calls) == 1:
            raise RuntimeError("first call fails")
        return [j + 100 for j in jobs]

    batcher = make_batcher(generate, max_batch_size=8, max_wait_ms=0)
    with pytest.raises(RuntimeError):
        batcher.submit(1).result(timeout=5)
    assert batcher.submit(2).result(timeout=5) == 102


def test_generate_is_never_called_concurrently(make_batcher) -> None:
    gen = RecordingGenerate(delay_s=0.01)
    batcher = make_batcher(gen, max_batch_size=3, max_wait_ms=1)
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(lambda j: batcher.submit(j).result(timeout=10), range(48)))
    assert results == [2 * j for j in range(48)]
    assert gen.max_active == 1
    assert sorted(j for batch in gen.batches for j in batch) == list(range(48))
    assert max(len(batch) for batch in gen.batches) <= 3


@pytest.mark.parametrize("how", ["future.cancel", "abandon"])
def test_a_cancelled_queued_job_is_not_sent_to_the_model(make_batcher, how: str) -> None:
    gen = RecordingGenerate()
    gen.release.clear()
    cancelled_jobs: list[int] = []
    batcher = make_batcher(gen, max_batch_size=8, max_wait_ms=0, cancel=cancelled_jobs.append)
    first = batcher.submit(1)
    _wait_until(lambda: gen.active == 1)
    dropped, kept = batcher.submit(2), batcher.submit(3)
    if how == "abandon":
        batcher.abandon(dropped)
    else:
        assert dropped.cancel()
    gen.release.set()
    assert (first.result(timeout=5), kept.result(timeout=5)) == (2, 6)
    with pytest.raises(CancelledError):
        dropped.result(timeout=0)
    assert gen.batches == [[1], [3]]
    assert cancelled_jobs == []  # a queued job needs no cancel: it never started


def test_abandoning_a_running_job_asks_the_backend_to_stop_it(make_batcher) -> None:
    gen = RecordingGenerate()
    gen.release.clear()
    batcher = make_batcher(gen, max_batch_size=8, max_wait_ms=0, cancel=lambda job: gen.release.set())
    running = batcher.submit(5)
    _wait_until(lambda: gen.active == 1)
    batcher.abandon(running)  # the hook "stops" generate by releasing it
    assert running.result(timeout=5) == 10  # the answer still lands, unread by the server
    assert batcher.submit(6).result(timeout=5) == 12


def test_close_answers_queued_and_running_jobs_at_once_and_cancels_the_running(make_batcher) -> None:
    gen = RecordingGenerate()
    gen.release.clear()  # the running batch would block for 5 s without the cancel
    cancelled: list[int] = []

    def cancel(job: int) -> None:
        cancelled.append(job)
        gen.release.set()

    batcher = make_batcher(gen, max_batch_size=1, max_wait_ms=0, cancel=cancel)
    running = batcher.submit(0)
    _wait_until(lambda: gen.active == 1)
    queued = [batcher.submit(j) for j in (1, 2)]
    batcher.close(timeout=5)
    for future in (running, *queued):
        with pytest.raises(BatcherClosedError, match="shutting down"):
            future.result(timeout=0)
    assert cancelled == [0]
    assert gen.batches == [[0]]  # the queued jobs never reached the model
    assert not batcher._thread.is_alive()
    with pytest.raises(BatcherClosedError, match="closed"):
        batcher.submit(4)
    with pytest.raises(BatcherClosedError, match="closed"):
        batcher.reserve()
    batcher.close(timeout=1)  # idempotent


def test_a_reservation_submitted_after_close_is_refused(make_batcher) -> None:
    batcher = make_batcher(RecordingGenerate(), max_batch_size=8, max_wait_ms=0)
    ticket = batcher.reserve()
    batcher.close(timeout=5)
    with pytest.raises(BatcherClosedError):
        ticket.submit(1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_batch_size": 0}, "max_batch_size"),
        ({"max_batch_size": 2.5}, "max_batch_size"),
        ({"max_batch_size": True}, "max_batch_size"),
        ({"max_wait_ms": -1}, "max_wait_ms"),
        ({"max_wait_ms": float("nan")}, "max_wait_ms"),
    ],
    ids=["batch-zero", "batch-float", "batch-bool", "wait-negative", "wait-nan"],
)
def test_bad_settings_are_rejected(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        DynamicBatcher(lambda jobs: jobs, **kwargs)  # type: ignore[arg-type]


def _wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.005)


def test_on_submit_sees_each_job_as_it_is_queued_while_the_model_is_busy(make_batcher) -> None:
    """The hook a backend starts a job's CPU work from: called at submit, not when its batch runs."""
    gen = RecordingGenerate()
    seen: list[tuple[int, int]] = []  # (job, batches finished when it was seen)
    batcher = make_batcher(
        gen, max_batch_size=8, max_wait_ms=0, on_submit=lambda j: seen.append((j, len(gen.batches)))
    )
    gen.release.clear()  # the first batch holds the model
    first = batcher.submit(1)
    while not batcher.running:
        time.sleep(0.005)
    later = [batcher.submit(j) for j in (2, 3)]
    assert seen == [(1, 0), (2, 0), (3, 0)]  # all seen before any batch finished
    gen.release.set()
    assert [f.result(timeout=5) for f in (first, *later)] == [2, 4, 6]


def test_an_on_submit_that_raises_still_queues_the_job(make_batcher) -> None:
    def broken(job: int) -> None:
        raise RuntimeError("prefetch failed")

    batcher = make_batcher(RecordingGenerate(), max_batch_size=8, max_wait_ms=0, on_submit=broken)
    assert batcher.submit(5).result(timeout=5) == 10
