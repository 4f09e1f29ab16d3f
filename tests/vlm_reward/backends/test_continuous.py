"""Unit tests for ContinuousRunner and AsyncRewardBackend: jobs run at once, cancel, shutdown."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from vlm_reward.backends.async_base import AsyncRewardBackend, LoopThread
from vlm_reward.backends.base import ScoreJob
from vlm_reward.backends.batching import BatcherClosedError
from vlm_reward.backends.continuous import ContinuousRunner


class Engine:
    """Coroutines on a loop thread: ``("wait", name)`` blocks until ``("set", name)`` runs."""

    def __init__(self) -> None:
        self.thread = LoopThread("test-engine")
        self.events: dict[str, asyncio.Event] = {}
        self.cancelled: list[str] = []

    def event(self, name: str) -> asyncio.Event:
        return self.events.setdefault(name, asyncio.Event())

    async def run(self, job: tuple[str, str]) -> str:
        action, name = job
        try:
            if action == "wait":
                await self.event(name).wait()
            elif action == "set":
                self.event(name).set()
            elif action == "fail":
                raise ValueError(f"bad job {name}")
            return f"{action} {name}"
        except asyncio.CancelledError:
            self.cancelled.append(name)
            raise

    def submit(self, job: tuple[str, str]):
        return self.thread.submit(self.run(job))


@pytest.fixture
def engine() -> Iterator[Engine]:
    made = Engine()
    yield made
    made.thread.stop()


def test_jobs_run_concurrently_not_one_after_another(engine: Engine) -> None:
    runner = ContinuousRunner(engine.submit)
    waiting = runner.submit(("wait", "go"))  # would block a one-at-a-time runner forever
    setting = runner.reserve().submit(("set", "go"))
    assert (setting.result(timeout=5), waiting.result(timeout=5)) == ("set go", "wait go")


def test_a_failing_job_fails_alone(engine: Engine) -> None:
    runner = ContinuousRunner(engine.submit)
    bad, good = runner.submit(("fail", "x")), runner.submit(("set", "y"))
    with pytest.raises(ValueError, match="bad job x"):
        bad.result(timeout=5)
    assert good.result(timeout=5) == "set y"


def test_abandon_cancels_the_engine_coroutine(engine: Engine) -> None:
    runner = ContinuousRunner(engine.submit)
    future = runner.submit(("wait", "never"))
    runner.abandon(future)
    with pytest.raises(BatcherClosedError, match="cancelled"):
        future.result(timeout=5)
    engine.thread.run(asyncio.sleep(0.05))  # the cancellation lands on the engine's loop
    assert engine.cancelled == ["never"]


def test_close_answers_live_jobs_at_once_and_cancels_them(engine: Engine) -> None:
    runner = ContinuousRunner(engine.submit, name="judge")
    futures = [runner.submit(("wait", f"job{i}")) for i in range(3)]
    runner.close()
    for future in futures:
        with pytest.raises(BatcherClosedError, match="shutting down; the job for 'judge' was stopped"):
            future.result(timeout=0)
    engine.thread.run(asyncio.sleep(0.05))  # let the cancellations land
    assert sorted(engine.cancelled) == ["job0", "job1", "job2"]
    with pytest.raises(BatcherClosedError):
        runner.submit(("set", "late"))
    with pytest.raises(BatcherClosedError):
        runner.reserve()
    runner.close()  # idempotent


class EchoBackend(AsyncRewardBackend):
    """Answers the task text after ``delay`` s; ``load_async`` can fail."""

    name = "echo-test"

    def __init__(self, model: str, fail_load: bool = False) -> None:
        super().__init__(model)
        self.fail_load = fail_load
        self.closed = False

    async def load_async(self) -> None:
        if self.fail_load:
            raise RuntimeError("no weights")

    async def generate_one(self, job: ScoreJob) -> str:
        if job.task_text == "boom":
            raise RuntimeError("engine error")
        await asyncio.sleep(0.01)
        return job.task_text

    async def close_async(self) -> None:
        self.closed = True


def _job(task: str) -> ScoreJob:
    return ScoreJob(task, "v.mp4", 16, 200704, 4.0)


def test_async_backend_generate_answers_each_job_in_order() -> None:
    backend = EchoBackend("m")
    backend.load()
    try:
        outputs = backend.generate([_job("a"), _job("boom"), _job("c")])
    finally:
        backend.close()
    assert outputs[0] == "a" and outputs[2] == "c"
    assert isinstance(outputs[1], RuntimeError) and "engine error" in str(outputs[1])
    assert backend.closed


def test_async_backend_runner_is_continuous_and_submit_needs_load() -> None:
    backend = EchoBackend("m")
    with pytest.raises(RuntimeError, match="not loaded"):
        backend.submit(_job("a"))
    backend.load()
    try:
        runner = backend.runner(max_batch_size=8, max_wait_ms=20, name="echo")
        assert isinstance(runner, ContinuousRunner)
        assert runner.submit(_job("hello")).result(timeout=5) == "hello"
    finally:
        backend.close()


def test_a_failed_async_load_stops_its_loop() -> None:
    backend = EchoBackend("m", fail_load=True)
    with pytest.raises(RuntimeError, match="no weights"):
        backend.load()
    with pytest.raises(RuntimeError, match="not loaded"):
        backend.submit(_job("a"))
