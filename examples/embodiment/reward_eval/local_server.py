"""A reward server started by the job itself: a child process on 127.0.0.1 with a free port.

Used when the job gets ``--backend/--model`` instead of ``--endpoint``. The context manager
waits for ``GET /health`` to answer 200 (the backend has loaded), yields the server, and
stops it on the way out, also when the body raised, so no server outlives the job. The
server's output goes to a log file in the run dir, which error messages point to.

The server runs on the interpreter :func:`vlm_reward.runtime.server_python` picks: this
one, or for a vLLM backend the vLLM venv's (``.venv-vllm``) when this one has no vLLM.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from vlm_reward.runtime import server_env, server_python

REPO = Path(__file__).resolve().parents[3]


class RewardServerError(RuntimeError):
    """The reward server is not usable (exited, never healthy, unreachable); says where to look."""


@dataclass(frozen=True)
class LocalServer:
    """A running server: its process, port and log file."""

    proc: subprocess.Popen
    port: int
    log_path: Path

    @property
    def endpoint(self) -> str:
        """The ``/score`` URL, as a ``reward_model.endpoint``."""
        return f"http://127.0.0.1:{self.port}/score"


def health_url(endpoint: str) -> str:
    """``http://host:port/score`` -> ``http://host:port/health``."""
    parts = urlsplit(endpoint)
    return urlunsplit((parts.scheme, parts.netloc, "/health", "", ""))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(
    backend: str,
    model: str,
    port: int,
    video_root: Path,
    plugins: Sequence[str] = (),
    backend_kwargs: dict[str, Any] | None = None,
    python: str | None = None,
) -> list[str]:
    """The ``python -m vlm_reward.libero_reward_server`` command line for these settings.

    ``python`` defaults to :func:`vlm_reward.runtime.server_python` for ``backend``.
    """
    cmd = [python or server_python(backend), "-m", "vlm_reward.libero_reward_server"]
    for plugin in plugins:
        cmd += ["--plugin", plugin]
    cmd += ["--backend", backend, "--model", model, "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--video-root", str(video_root)]
    if backend_kwargs:
        cmd += ["--backend-kwargs", json.dumps(backend_kwargs)]
    return cmd


def wait_healthy(proc: subprocess.Popen, endpoint: str, log_path: Path, timeout: float) -> None:
    """Poll ``/health`` until it answers 200; raise :class:`RewardServerError` if the server
    exits first or ``timeout`` seconds pass."""
    url = health_url(endpoint)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RewardServerError(f"the reward server exited with {proc.returncode}; see {log_path}")
        try:
            if requests.get(url, timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass  # not listening yet
        time.sleep(0.2)
    raise RewardServerError(f"the reward server was not healthy after {timeout:g} s; see {log_path}")


def check_endpoint(endpoint: str, timeout: float = 10.0) -> None:
    """Fail early, naming the URL, when a given endpoint is not a healthy server."""
    url = health_url(endpoint)
    try:
        status = requests.get(url, timeout=timeout).status_code
    except requests.RequestException as exc:
        raise RewardServerError(f"the reward server is not reachable at {url}: {exc}") from exc
    if status != 200:
        raise RewardServerError(f"the reward server at {url} is not ready (HTTP {status}).")


def stop(proc: subprocess.Popen, grace: float = 15.0) -> None:
    """SIGTERM (uvicorn shuts down cleanly), then SIGKILL after ``grace`` seconds."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def local_reward_server(
    backend: str,
    model: str,
    video_root: Path,
    log_path: Path,
    plugins: Sequence[str] = (),
    backend_kwargs: dict[str, Any] | None = None,
    timeout: float = 300.0,
    python: str | None = None,
) -> Iterator[LocalServer]:
    """Start the reward server, wait until it is healthy, yield it, and always stop it.

    ``video_root`` becomes the server's ``--video-root``: every video the caller sends by
    path must lie inside it. The repo root is put first on the child's ``PYTHONPATH`` so
    ``--plugin`` modules of this repo (and ``vlm_reward``) import from any directory, also
    from the vLLM venv, where ``vlm_reward`` is not installed. ``python`` defaults to
    :func:`vlm_reward.runtime.server_python` for ``backend`` (``ImportError`` if a vLLM
    backend has no vLLM to run on).
    """
    python = python or server_python(backend)
    port = free_port()
    cmd = server_command(backend, model, port, video_root, plugins, backend_kwargs, python)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, **server_env(python), "PYTHONPATH": path}
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=log)
    try:
        server = LocalServer(proc, port, log_path)
        wait_healthy(proc, server.endpoint, log_path, timeout)
        yield server
    finally:
        stop(proc)
