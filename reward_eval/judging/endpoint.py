"""The reward server a command scores against: a given ``--endpoint``, or a local one it starts.

With ``--endpoint`` the server must already answer ``GET /health`` with 200; otherwise
:class:`EndpointUnavailableError` names the URL. With ``--backend/--model`` the command
starts ``python -m vlm_reward.libero_reward_server`` on 127.0.0.1 and a free port
(:class:`vlm_reward.tools.server_process.RewardServerProcess`), on the interpreter
:func:`vlm_reward.tools.runtime.server_python` picks (this one, or for a vLLM backend the vLLM
venv's when this one has no vLLM). It waits for ``/health`` 200 (the backend has loaded),
yields the endpoint, and stops the server on the way out, also when the body raised, so no
server outlives the command. The server's output goes to a log file in the run dir, which
error messages point to; a server that does not come up is
:class:`vlm_reward.tools.server_process.ServerStartError`.

Both errors are the user's to fix, not bugs: :data:`JUDGE_ERRORS` end a command with
their one-line message and status 1 (:func:`..job.run_dir.run_command`).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from vlm_reward.tools.runtime import server_python
from vlm_reward.tools.server_process import RewardServerProcess, ServerStartError, backend_args, health_url


class EndpointUnavailableError(RuntimeError):
    """A given ``--endpoint`` is not a ready reward server (unreachable, or ``/health`` not 200)."""


JUDGE_ERRORS = (EndpointUnavailableError, ServerStartError)


def check_endpoint(endpoint: str, timeout: float = 10.0) -> None:
    """Fail early, naming the URL, when a given endpoint is not a healthy server.

    Asked with ``requests``, as the env's client will ask it (same proxy settings).
    """
    url = health_url(endpoint)
    try:
        status = requests.get(url, timeout=timeout).status_code
    except requests.RequestException as exc:
        raise EndpointUnavailableError(f"the reward server is not reachable at {url}: {exc}") from exc
    if status != 200:
        raise EndpointUnavailableError(f"the reward server at {url} is not ready (HTTP {status}).")


def local_server(
    args: argparse.Namespace, model: str, video_root: Path, log_path: Path
) -> RewardServerProcess:
    """Start (not await) the local server of ``--backend``/``--plugin``/``--server-kwargs`` serving
    ``model``, with ``video_root`` as its ``--video-root``: every video sent by path must lie in it."""
    return RewardServerProcess(
        backend_args(args.backend, model, video_root, args.server_kwargs),
        log_path,
        python=server_python(args.backend),
        plugins=args.plugin,
    )


@contextmanager
def scoring_endpoint(
    args: argparse.Namespace, model: str | None, video_root: Path, log_path: Path
) -> Iterator[str]:
    """Yield the ``/score`` URL: the given ``--endpoint`` (checked), or a local server's (started,
    awaited for ``--server-start-timeout`` s, and always stopped)."""
    if args.endpoint is not None:
        check_endpoint(args.endpoint)
        yield args.endpoint
        return
    # model is never None here: check_scoring_options + resolve_model see to it.
    server = local_server(args, str(model), video_root, log_path)
    try:
        server.wait_ready(args.server_start_timeout)
        print(f"[reward-eval] local {args.backend} server on {server.endpoint} (log: {log_path})")
        yield server.endpoint
    finally:
        server.stop()
