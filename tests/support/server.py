"""The reward server as a real child process on 127.0.0.1, for end-to-end tests.

A thin adapter over :class:`vlm_reward.tools.server_process.RewardServerProcess` (the launcher the
evaluation job and the benchmarks use too): same process, log and health polling, but the
test backends are loaded by default and a server that does not get where a test waits for
it fails the test (``pytest.fail``, with its log) instead of raising.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from vlm_reward.tools.server_process import (
    SERVER_MODULE,
    HealthReply,
    RewardServerProcess,
    ServerStartError,
    free_port,
)

__all__ = [
    "REPO",
    "Samples",
    "ServerProcess",
    "free_port",
    "metric_samples",
    "running_servers",
    "token_counts",
]

REPO = Path(__file__).resolve().parents[2]
TEST_PLUGINS = ("tests.support.fake_backends",)


def running_servers() -> list[psutil.Process]:
    """Reward servers among this process's descendants that still run.

    A zombie (a child that exited and was not yet reaped, e.g. by an earlier test's launcher) and a
    process that ends while being read are skipped: neither serves, and psutil raises on both."""
    found = []
    for process in psutil.Process().children(recursive=True):
        try:
            if process.status() != psutil.STATUS_ZOMBIE and SERVER_MODULE in " ".join(process.cmdline()):
                found.append(process)
        except psutil.Error:
            continue
    return found


class ServerProcess(RewardServerProcess):
    """``python -m vlm_reward.libero_reward_server`` on this interpreter, its log in a file.

    ``args`` are the server options after ``--host``/``--port``; ``plugins`` are imported
    with ``--plugin`` (by default the test backends of ``tests.support.fake_backends``).
    """

    def __init__(
        self,
        args: list[str],
        log_path: Path,
        env: dict[str, str] | None = None,
        plugins: tuple[str, ...] = TEST_PLUGINS,
        port: int | None = None,
    ) -> None:
        super().__init__(args, log_path, plugins=plugins, env=env, port=port, repo=REPO)

    def wait_until(
        self,
        predicate: Callable[[HealthReply], bool],
        timeout: float = 60.0,
        state: str = "in the awaited state",
    ) -> HealthReply:
        """Poll ``/health`` until ``predicate`` holds for a reply (``status_code``, ``text``,
        ``json()``) and return it; fail the test with the server log if it never does (the
        server is stopped first, so no fixture leaves a process behind)."""
        try:
            return super().wait_until(predicate, timeout, state)
        except ServerStartError as exc:
            pytest.fail(f"{exc}:\n{self.log()}")

    def wait_ready(self, timeout: float = 60.0) -> ServerProcess:
        """Wait for ``/health`` 200; fail the test with the server log if it never comes."""
        self.wait_until(lambda reply: reply.status_code == 200, timeout, "healthy")
        return self

    def log_containing(self, *needles: str, timeout: float = 5.0) -> str:
        """The log once it holds every one of ``needles``, or as it is after ``timeout`` seconds.

        The server writes a request's access line after the response has gone out, so a
        client that reads the log right after its response can be a moment early.
        """
        deadline = time.monotonic() + timeout
        while any(n not in self.log() for n in needles) and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.log()


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def metric_samples(base_url: str) -> Samples:
    """Every sample of a ``GET /metrics`` scrape (no key: the server needs ``--metrics-public``
    or none), by name and sorted labels, parsed with ``prometheus_client``'s own parser."""
    response = requests.get(f"{base_url}/metrics", timeout=10)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def token_counts(base_url: str, backend: str) -> tuple[float, float]:
    """(prompt, generated) tokens a server's ``GET /metrics`` has counted for ``backend`` so far."""
    samples = metric_samples(base_url)
    labels = (("backend", backend),)
    names = ("vlm_reward_prompt_tokens_total", "vlm_reward_generated_tokens_total")
    return samples.get((names[0], labels), 0.0), samples.get((names[1], labels), 0.0)
