"""The reward server as a real child process on 127.0.0.1, for end-to-end tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import requests

from examples.embodiment.reward_eval.local_server import free_port, stop

__all__ = ["REPO", "ServerProcess", "free_port"]

REPO = Path(__file__).resolve().parents[2]


class ServerProcess:
    """``python -m vlm_reward.libero_reward_server`` as a child process, with its log in a file.

    ``plugins`` are modules imported with ``--plugin`` (they register test backends).
    """

    def __init__(
        self,
        args: list[str],
        log_path: Path,
        env: dict[str, str] | None = None,
        plugins: tuple[str, ...] = ("tests.support.fake_backends",),
        port: int | None = None,
    ) -> None:
        self.port = port or free_port()
        self.log_path = log_path
        cmd = [sys.executable, "-m", "vlm_reward.libero_reward_server"]
        for plugin in plugins:
            cmd += ["--plugin", plugin]
        cmd += ["--host", "127.0.0.1", "--port", str(self.port), *args]
        path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
        full_env = {**os.environ, "PYTHONPATH": path, **(env or {})}
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, cwd=REPO, env=full_env, stdout=log, stderr=log)

    @property
    def endpoint(self) -> str:
        """The ``/score`` URL, as a ``reward_model.endpoint``."""
        return self.url("/score")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_containing(self, *needles: str, timeout: float = 5.0) -> str:
        """The log once it holds every one of ``needles``, or as it is after ``timeout`` s.

        The server writes a request's access line after the response has gone out, so a
        client that reads the log right after its response can be a moment early.
        """
        deadline = time.monotonic() + timeout
        while any(n not in self.log() for n in needles) and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.log()

    def wait_until(
        self, predicate: Callable[[requests.Response], bool], timeout: float = 60.0
    ) -> requests.Response:
        """Poll ``/health`` until ``predicate`` holds; fail with the server log if it never does.

        A server that never gets there is stopped before the test fails, so no fixture
        leaves a process behind.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"server exited with {self.proc.returncode}:\n{self.log()}")
            try:
                response = requests.get(self.url("/health"), timeout=2)
                if predicate(response):
                    return response
            except requests.ConnectionError:
                pass
            time.sleep(0.05)
        self.stop()
        pytest.fail(f"server /health never reached the expected state in {timeout} s:\n{self.log()}")

    def wait_ready(self, timeout: float = 60.0) -> ServerProcess:
        self.wait_until(lambda r: r.status_code == 200, timeout)
        return self

    def stop(self) -> int:
        """SIGTERM (uvicorn's graceful shutdown); returns the exit code."""
        stop(self.proc)
        return self.proc.returncode
