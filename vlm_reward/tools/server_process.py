"""The reward server as a child process: start it, wait for ``/health``, read its log, stop it.

One launcher for everything that runs a server of its own: the evaluation job's local
server (``reward_eval``), the end-to-end tests (``tests/support``), the benchmarks
(``benchmarks/harness.py``) and the replicas Ray places (:mod:`vlm_reward.ray_replicas`). It
starts ``PYTHON -m vlm_reward.libero_reward_server --host HOST --port PORT ARGS`` (HOST is
the protocol's default host unless the caller names its node's address) with its output in a log
file. It loads none of the server's stack (FastAPI, torch), so it works wherever ``vlm_reward``
imports.

- ``python`` is the interpreter: for a backend, :func:`vlm_reward.tools.runtime.server_python`
  picks it (the vLLM venv for a vLLM backend when this interpreter has no vLLM); the child
  also gets :func:`vlm_reward.tools.runtime.server_env`'s defaults.
- ``repo`` goes first on the child's ``PYTHONPATH`` and is its working directory, so
  ``vlm_reward`` and ``--plugin`` modules of that checkout import from any interpreter (the
  vLLM venv does not install ``vlm_reward``), and a benchmark can run an older checkout.
- A server that exits, or whose ``/health`` never gets where the caller waits for it, is
  stopped and reported with :class:`ServerStartError`, which names the log file: no caller
  leaves a process behind because its start failed. A start that failed is reported as
  soon as it shows, with the server's own sentence: an exit (a missing model path ends the
  server before it listens) quotes its log's ``error:`` line, and a ``/health`` 503
  ``backend_load_failed`` (the weights will never load) or ``self_test_failed`` (the judge got
  its self-test wrong) its message.
- ``die_with_parent`` (Linux) has the kernel SIGKILL the server when the thread that started
  it ends, so a supervisor that is killed (a Ray actor's process) leaves no server behind.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from vlm_reward.protocol import DEFAULT_HOST
from vlm_reward.server.launch import LaunchSettings
from vlm_reward.server.serving import ServingOptions
from vlm_reward.settings_flags import flag_name
from vlm_reward.tools.runtime import REPO, server_env

HOST = DEFAULT_HOST
SERVER_MODULE = "vlm_reward.libero_reward_server"
# SIGTERM drains the server (vlm_reward.server.serving): its jobs get --drain-timeout (its default is
# ServingOptions.drain_timeout_s), then 5 s to flush the last answers. The launcher waits that long,
# plus margin, before SIGKILL.
_DRAIN_MARGIN_S = 10.0
STOP_GRACE_S = ServingOptions.drain_timeout_s + _DRAIN_MARGIN_S
# Seconds a launcher waits for a server's /health 200 unless told otherwise: a judge's weights load
# in that time on a CPU (the commands' --server-start-timeout default, and :meth:`wait_ready`'s).
START_TIMEOUT_S = 300.0


def stop_grace(args: Sequence[str]) -> float:
    """Seconds to wait after SIGTERM for a server started with ``args``: its drain, plus margin."""
    drain = _flag_value(args, flag_name(ServingOptions, "drain_timeout_s"))
    return (ServingOptions.drain_timeout_s if drain is None else float(drain)) + _DRAIN_MARGIN_S


def _flag_value(args: Sequence[str], flag: str) -> str | None:
    """The value of ``flag`` in ``args`` (``--flag V`` or ``--flag=V``; the last wins), or ``None``."""
    value = None
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(flag + "="):
            value = arg.split("=", 1)[1]
    return value


class ServerStartError(RuntimeError):
    """A reward server process did not get ready: it exited, or ``/health`` never reached the
    awaited state in time. The message names the log file to read."""


@dataclass(frozen=True)
class HealthReply:
    """One answer of ``GET /health``: its status and body (what the wait predicates look at)."""

    status_code: int
    text: str

    def json(self) -> Any:
        """The body parsed as JSON (``ValueError`` when it is not JSON)."""
        return json.loads(self.text)


def free_port(host: str = HOST) -> int:
    """A TCP port on ``host`` (an address of this machine) that nothing listens on right now."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def route_url(endpoint: str, route: str) -> str:
    """Another route of the server an endpoint names: ``http://host:port/score`` -> ``http://host:port/ROUTE``."""
    parts = urlsplit(endpoint)
    return urlunsplit((parts.scheme, parts.netloc, route, "", ""))


def health_url(endpoint: str) -> str:
    """``http://host:port/score`` -> ``http://host:port/health``."""
    return route_url(endpoint, "/health")


# The servers started here listen on 127.0.0.1: never ask an http_proxy of the environment.
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def probe_health(url: str, timeout: float = 2.0, cafile: str | None = None) -> HealthReply | None:
    """``GET url`` once, bypassing any proxy: the reply (any status), or ``None`` when nothing
    answers (refused, reset, timed out). ``cafile`` verifies an https server's certificate."""
    opener = _NO_PROXY
    if cafile is not None:
        context = ssl.create_default_context(cafile=cafile)
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
        )
    try:
        with opener.open(url, timeout=timeout) as response:
            return HealthReply(response.status, response.read().decode("utf-8", "replace"))
    except urllib.error.HTTPError as exc:  # a non-2xx answer is still an answer
        return HealthReply(exc.code, _body(exc))
    except (urllib.error.URLError, OSError):  # ConnectionError, timeouts, a half-open socket
        return None


def _body(reply: urllib.error.HTTPError) -> str:
    """A non-2xx reply's body, or ``""`` when it does not arrive in time: its status has already
    come, and a loaded server (a judge loading beside a training) may stall on the rest."""
    try:
        return reply.read().decode("utf-8", "replace")
    except OSError:  # TimeoutError, a reset
        return ""


def backend_args(
    backend: str,
    model: str,
    video_root: str | os.PathLike[str],
    backend_kwargs: Mapping[str, Any] | None = None,
) -> list[str]:
    """The server options that choose what it serves: ``--backend``, ``--model``, ``--video-root``
    and, when given, ``--backend-kwargs`` (as JSON)."""
    # The fields of ServerConfig, whose module loads the backend registry: only a launcher that
    # chooses a judge pays for that import.
    from vlm_reward.server.config import ServerConfig

    values = {"backend": backend, "model": model, "video_root": os.fspath(video_root)}
    if backend_kwargs:
        values["backend_kwargs"] = json.dumps(dict(backend_kwargs))
    return [part for name, value in values.items() for part in (flag_name(ServerConfig, name), value)]


def server_command(
    python: str, port: int, args: Sequence[str], plugins: Sequence[str] = (), host: str = HOST
) -> list[str]:
    """``PYTHON -m vlm_reward.libero_reward_server [--plugin P ...] --host HOST --port PORT ARGS``."""
    cmd = [python, "-m", SERVER_MODULE]
    for plugin in plugins:
        cmd += [flag_name(LaunchSettings, "plugins"), plugin]
    where = [flag_name(ServingOptions, "host"), host, flag_name(ServingOptions, "port"), str(port)]
    return [*cmd, *where, *args]


_PR_SET_PDEATHSIG = 1  # prctl(2)


def _kill_with_parent() -> None:
    """In the child before ``exec``: SIGKILL when the thread that forked it ends (Linux prctl)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def stop_process(proc: subprocess.Popen, grace: float = STOP_GRACE_S) -> int:
    """SIGTERM, then SIGKILL after ``grace`` seconds; returns the exit code (at once if it has exited)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def failure_reason(log: str) -> str | None:
    """Why a server that exited did not start, from its log: the last ``error:`` line's text
    (argparse's, e.g. a model path that does not exist), else its last line."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for line in reversed(lines):
        if "error: " in line:
            return line.split("error: ", 1)[1]
    return lines[-1] if lines else None


# /health 503 types that never turn into a 200: a failed load, a failed self-test.
NEVER_READY = ("backend_load_failed", "self_test_failed")


def load_failure(reply: HealthReply) -> str | None:
    """The message of a ``/health`` reply saying the backend will never serve: it failed to
    load, or failed its self-test."""
    if reply.status_code != 503:
        return None
    try:
        error = reply.json().get("error", {})
    except (ValueError, AttributeError):
        return None
    return error.get("message") if error.get("type") in NEVER_READY else None


class RewardServerProcess:
    """``python -m vlm_reward.libero_reward_server`` as a child process, its log in a file.

    Started in ``__init__`` without waiting, so a caller can start several servers and then
    :meth:`wait_ready` each. As a context manager it waits for ``/health`` 200 on entry and
    always stops the server on exit. ``args`` are the server options after ``--host`` and
    ``--port`` (see :func:`backend_args`); ``env`` entries override the inherited
    environment. ``host`` is the address it listens on (127.0.0.1 by default; another one
    needs an API key, see the server's ``--host``); with ``die_with_parent`` the kernel kills
    it when the calling thread ends (start it from a thread that lives as long as its owner).
    """

    def __init__(
        self,
        args: Sequence[str],
        log_path: Path,
        *,
        python: str | None = None,
        plugins: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        port: int | None = None,
        repo: Path = REPO,
        host: str = HOST,
        die_with_parent: bool = False,
    ) -> None:
        self.python = python or sys.executable
        self.host = host
        self.port = port or free_port(host)
        self.log_path = Path(log_path)
        self.cmd = server_command(self.python, self.port, args, plugins, host)
        self.stop_grace = stop_grace(args)
        # A server with --ssl-certfile serves https; its own (self-signed) certificate verifies it.
        self.certfile = _flag_value(args, flag_name(ServingOptions, "ssl_certfile"))
        self.scheme = "https" if self.certfile is not None else "http"
        path = os.pathsep.join(p for p in (str(repo), os.environ.get("PYTHONPATH", "")) if p)
        child_env = {**os.environ, **server_env(self.python), "PYTHONPATH": path, **(env or {})}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.cmd,
                cwd=repo,
                env=child_env,
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
                preexec_fn=_kill_with_parent if die_with_parent else None,
            )

    @property
    def endpoint(self) -> str:
        """The ``/score`` URL, as a ``reward_model.endpoint``."""
        return self.url("/score")

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self.proc.pid

    def url(self, path: str) -> str:
        """``http(s)://HOST:PORT`` + ``path`` (an IPv6 host in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{path}"

    def log(self) -> str:
        """Everything the server has written so far (stdout and stderr)."""
        return self.log_path.read_text(errors="replace")

    def wait_until(
        self, predicate: Callable[[HealthReply], bool], timeout: float, state: str = "in the awaited state"
    ) -> HealthReply:
        """Poll ``/health`` until ``predicate`` holds for a reply and return that reply.

        Raises :class:`ServerStartError` (after stopping the server) when it exits first or
        ``timeout`` seconds pass; ``state`` says in that message what was awaited.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                reason = failure_reason(self.log())
                detail = f": {reason.rstrip('.')}" if reason else ""  # the sentence goes on after it
                raise ServerStartError(
                    f"the reward server exited with {self.proc.returncode}{detail}; see {self.log_path}"
                )
            reply = probe_health(self.url("/health"), cafile=self.certfile)
            if reply is not None and predicate(reply):
                return reply
            if reply is not None and (failed := load_failure(reply)) is not None:
                self.stop()  # it would answer 503 forever: report the reason now, not at the timeout
                raise ServerStartError(f"{failed}; see {self.log_path}")
            time.sleep(0.05)
        self.stop()
        raise ServerStartError(f"the reward server was not {state} after {timeout:g} s; see {self.log_path}")

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> RewardServerProcess:
        """Wait for ``/health`` 200 (the backend has loaded); :class:`ServerStartError` if it never is."""
        self.wait_until(lambda reply: reply.status_code == 200, timeout, state="healthy")
        return self

    def stop(self, grace: float | None = None) -> int:
        """SIGTERM (the server drains), SIGKILL after ``grace`` s (default: its drain timeout plus
        margin); returns the exit code."""
        return stop_process(self.proc, self.stop_grace if grace is None else grace)

    def __enter__(self) -> RewardServerProcess:
        try:
            return self.wait_ready()
        except BaseException:
            self.stop()  # e.g. KeyboardInterrupt while waiting
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
