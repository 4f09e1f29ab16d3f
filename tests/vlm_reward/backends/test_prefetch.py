"""Unit tests for vlm_reward.backends.prefetch.Prefetcher, driven from plain threads (fast)."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from vlm_reward.backends.prefetch import Prefetcher


@dataclass(eq=False)
class Job:
    value: int


class Recorder:
    """A ``prepare`` that records the thread and state of each call; ``value < 0`` fails."""

    def __init__(self, barrier: threading.Barrier | None = None) -> None:
        self.calls: list[tuple[int, str, int]] = []
        self.states = 0
        self.barrier = barrier
        self._lock = threading.Lock()

    def make_state(self) -> int:
        with self._lock:
            self.states += 1
            return self.states

    def __call__(self, job: Job, state: int) -> int:
        if self.barrier is not None:
            self.barrier.wait(timeout=5)  # only passes when enough jobs run at once
        with self._lock:
            self.calls.append((job.value, threading.current_thread().name, state))
        if job.value < 0:
            raise ValueError(f"bad job {job.value}")
        return 10 * job.value


@pytest.fixture
def make() -> Iterator:
    made: list[Prefetcher] = []

    def build(recorder: Recorder, workers: int = 2) -> Prefetcher[Job, int]:
        prefetcher = Prefetcher(recorder, recorder.make_state, workers=workers, name="test-prefetch")
        made.append(prefetcher)
        return prefetcher

    yield build
    for prefetcher in made:
        prefetcher.close()


def test_a_started_job_is_prepared_on_a_worker_and_taken_once(make) -> None:
    recorder = Recorder()
    prefetcher = make(recorder)
    job = Job(3)
    prefetcher.start(job)
    prefetcher.start(job)  # a second start does nothing
    assert prefetcher.take(job) == 30
    assert [(v, name.startswith("test-prefetch")) for v, name, _ in recorder.calls] == [(3, True)]
    assert prefetcher.pending == 0


def test_a_job_never_started_is_prepared_in_the_taking_thread() -> None:
    recorder = Recorder()
    prefetcher = Prefetcher(recorder, recorder.make_state, workers=1)
    try:
        assert prefetcher.take(Job(4)) == 40
    finally:
        prefetcher.close()
    assert recorder.calls[0][1] == threading.current_thread().name


def test_started_jobs_are_prepared_at_the_same_time(make) -> None:
    """Each preparation waits at a barrier of two: they pass only if both run at once."""
    recorder = Recorder(threading.Barrier(2))
    prefetcher = make(recorder, workers=2)
    jobs = [Job(1), Job(2)]
    for job in jobs:
        prefetcher.start(job)
    assert [prefetcher.take(job) for job in jobs] == [10, 20]
    assert len({name for _, name, _ in recorder.calls}) == 2


def test_each_thread_gets_its_own_state_once(make) -> None:
    recorder = Recorder(threading.Barrier(2))
    prefetcher = make(recorder, workers=2)
    jobs = [Job(i) for i in range(2)]
    for job in jobs:
        prefetcher.start(job)
    for job in jobs:
        prefetcher.take(job)
    recorder.barrier = None
    for job in (Job(5), Job(6)):  # later jobs reuse the workers' states
        prefetcher.start(job)
        prefetcher.take(job)
    by_thread = {}
    for _, name, state in recorder.calls:
        by_thread.setdefault(name, set()).add(state)
    assert recorder.states == 2 and all(len(states) == 1 for states in by_thread.values())


def test_a_failed_preparation_raises_when_taken(make) -> None:
    prefetcher = make(Recorder())
    job = Job(-1)
    prefetcher.start(job)
    with pytest.raises(ValueError, match="bad job -1"):
        prefetcher.take(job)


def test_a_job_dropped_before_it_is_taken_is_forgotten(make) -> None:
    """A request abandoned while queued: its result goes with its job, nothing accumulates."""
    prefetcher = make(Recorder())
    job = Job(7)
    prefetcher.start(job)
    assert prefetcher.pending == 1
    del job
    for _ in range(200):  # the worker lets go of the job once its preparation has run
        gc.collect()
        if prefetcher.pending == 0:
            break
        time.sleep(0.01)
    assert prefetcher.pending == 0


@pytest.mark.parametrize("workers", [0, -1, 1.5, True], ids=["zero", "negative", "float", "bool"])
def test_bad_worker_counts_are_rejected(workers: object) -> None:
    with pytest.raises(ValueError, match="workers must be an integer >= 1"):
        Prefetcher(Recorder(), int, workers=workers)  # type: ignore[arg-type]
