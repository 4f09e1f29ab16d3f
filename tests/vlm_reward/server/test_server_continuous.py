"""The server with a continuous-batching backend (``async_tokens``), as a real process.

The backend is an :class:`AsyncRewardBackend`, like the vLLM ones: the server submits
each request the moment its video is validated, so a short request is not held behind a
long one, a client that leaves has its job cancelled (an engine would abort it), and a
SIGTERM drains: new requests get 503 at once, running jobs finish within ``--drain-timeout``,
and only those still running then get 503 and are cancelled.
"""

from __future__ import annotations

import json
import shutil
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from tests.support.server import ServerProcess

pytestmark = pytest.mark.slow

TOKEN_SECONDS = 0.05  # a 200-token job takes 10 s, a 2-token job 0.1 s


def _start(root: Path, events: Path, *extra: str) -> ServerProcess:
    kwargs = json.dumps({"log_path": str(events), "token_seconds": TOKEN_SECONDS})
    args = ["--backend", "async_tokens", "--model", "fake", "--video-root", str(root), *extra]
    return ServerProcess([*args, "--backend-kwargs", kwargs], root / "server.log").wait_ready()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory, sample_mp4: str) -> Path:
    path = tmp_path_factory.mktemp("continuous")
    shutil.copy(sample_mp4, path / "episode.mp4")
    return path


@pytest.fixture(scope="module")
def served(root: Path) -> Iterator[tuple[ServerProcess, Path]]:
    events = root / "events.log"
    server = _start(root, events)
    yield server, events
    server.stop()


def _request(task: str, tokens: int) -> dict:
    return {"task_text": task, "video_path": "episode.mp4", "backend_kwargs": {"tokens": tokens}}


def _events(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _wait_for(path: Path, line: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while line not in _events(path):
        if time.monotonic() > deadline:
            raise AssertionError(f"{line!r} never logged: {_events(path)}")
        time.sleep(0.02)


def test_a_short_request_is_not_held_behind_a_long_one_and_a_leaving_client_is_aborted(served) -> None:
    server, events = served
    with ThreadPoolExecutor(1) as pool:
        # The long job's client gives up after 3 s, well before its 10 s of generation.
        long = pool.submit(requests.post, server.endpoint, json=_request("long", 200), timeout=3)
        _wait_for(events, "start long")
        short = requests.post(server.endpoint, json=_request("short", 2), timeout=30)
        assert short.status_code == 200 and short.json()["score"] == 0.5
        assert "done short" in _events(events) and "done long" not in _events(events)
        with pytest.raises(requests.exceptions.ReadTimeout):
            long.result()
    _wait_for(events, "cancelled long")
    assert "done long" not in _events(events)
    assert "backend=async_tokens status=499" in server.log_containing("status=499")


def test_a_budget_above_the_cap_is_refused_before_the_engine_sees_it(served) -> None:
    server, events = served
    response = requests.post(server.endpoint, json=_request("greedy", 10**6), timeout=30)
    assert response.status_code == 422 and response.json()["error"]["type"] == "limit_exceeded"
    assert "start greedy" not in _events(events)


DRAIN_S = 3.0


def test_sigterm_drains_finishes_what_fits_and_cancels_the_rest(root: Path, tmp_path: Path) -> None:
    """A 1 s job finishes during the 3 s drain (200); a 50 s one gets 503 and is cancelled;
    a request arriving meanwhile gets 503 with Retry-After, /health 503; the exit code is 0."""
    events = tmp_path / "events.log"
    server = _start(root, events, "--drain-timeout", str(DRAIN_S))
    with ThreadPoolExecutor(2) as pool:
        jobs = {"short": 20, "long": 1000}
        futures = {
            task: pool.submit(requests.post, server.endpoint, json=_request(task, n), timeout=60)
            for task, n in jobs.items()
        }
        for task in jobs:
            _wait_for(events, f"start {task}")
        start = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        late = requests.post(server.endpoint, json=_request("late", 2), timeout=10)
        health = requests.get(server.url("/health"), timeout=10)
        short, long = futures["short"].result(), futures["long"].result()
    answered = time.monotonic() - start
    assert (late.status_code, late.json()["error"]["type"], late.headers["retry-after"]) == (
        503,
        "shutting_down",
        "1",
    )
    assert (health.status_code, health.json()["error"]["type"]) == (503, "shutting_down")
    assert short.status_code == 200 and short.json()["score"] == 0.5
    assert (long.status_code, long.json()["error"]["type"]) == (503, "shutting_down")
    assert DRAIN_S - 0.5 < answered < DRAIN_S + 5, answered
    assert server.proc.wait(timeout=30) == 0
    started = [e for e in _events(events) if e.startswith(("start", "done", "cancelled"))]
    assert sorted(started) == ["cancelled long", "done short", "start long", "start short"]
