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

Keys: a local server gets a fresh random key from the command, passed to it explicitly as
:data:`vlm_reward.protocol.API_KEY_ENV` and to the command's own client through
:data:`LOCAL_KEY_ENV`, so a key the user exported (the cluster recipe exports one) is never
inherited by the server while the client sends none. A given ``--endpoint`` gets the key of
the variable ``--api-key-env`` names; its check asks an authenticated route, so a refused key
ends the command before any rollout.

With ``--replicas N`` (N > 1) the local judge is N servers on a private Ray cluster of this
machine instead (:mod:`.replicas`), under the same fresh key; the endpoint is then their list.

These errors are the user's to fix, not bugs: :data:`JUDGE_ERRORS` end a command with their
one-line message and status 1 (:func:`..job.run_dir.run_command`); a 401 is one of them
(:class:`vlm_reward.client.http.RewardAuthError`, never a fallback).
"""

from __future__ import annotations

import argparse
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

from vlm_reward.client.http import RewardAuthError
from vlm_reward.protocol import API_KEY_ENV, authorization
from vlm_reward.tools.runtime import server_python
from vlm_reward.tools.server_process import (
    RewardServerProcess,
    ServerStartError,
    backend_args,
    health_url,
    route_url,
)

# The variable through which a command's own client reads the key of the local server it started.
LOCAL_KEY_ENV = "REWARD_EVAL_LOCAL_SERVER_KEY"


class EndpointUnavailableError(RuntimeError):
    """A given ``--endpoint`` is not a ready reward server (unreachable, or ``/health`` not 200)."""


JUDGE_ERRORS = (EndpointUnavailableError, ServerStartError, RewardAuthError)


@dataclass(frozen=True)
class JudgeEndpoint:
    """Where a command's calls go: the ``/score`` URL (a list: replicas) and the variable its
    client reads the key from (``reward_model.api_key_env``; ``None``: the server takes no key)."""

    url: str | list[str]
    api_key_env: str | None


def check_endpoint(
    endpoint: str, api_key_env: str | None = None, ca_bundle: str | None = None, timeout: float = 10.0
) -> None:
    """Fail early, naming the URL, when a given endpoint is not a healthy server or refuses our key.

    Asked with ``requests``, as the env's client will ask it (same proxy settings). ``/health``
    is public, so the key is checked on ``GET /backends``, which a keyed server guards.
    """
    url = health_url(endpoint)
    verify: str | bool = ca_bundle or True
    try:
        status = requests.get(url, timeout=timeout, verify=verify).status_code
    except requests.RequestException as exc:
        raise EndpointUnavailableError(f"the reward server is not reachable at {url}: {exc}") from exc
    if status != 200:
        raise EndpointUnavailableError(f"the reward server at {url} is not ready (HTTP {status}).")
    key = os.environ.get(api_key_env, "").strip() if api_key_env else ""
    headers = {"Authorization": authorization(key)} if key else {}
    try:
        guarded = requests.get(
            route_url(endpoint, "/backends"), headers=headers, timeout=timeout, verify=verify
        )
    except requests.RequestException as exc:
        raise EndpointUnavailableError(f"the reward server at {endpoint} stopped answering: {exc}") from exc
    if guarded.status_code == 401:
        raise RewardAuthError(endpoint, "unauthorized", api_key_env)


# The backend of a local server when no --backend is given: it runs on CPU in the main venv, so
# the default works anywhere. On purpose not the env YAML's serving default (qwen_vl_vllm).
DEFAULT_LOCAL_BACKEND = "qwen_vl_hf"


def served_backend(args: argparse.Namespace) -> str:
    """The backend of the local server a command starts: ``--backend``, else
    :data:`DEFAULT_LOCAL_BACKEND`."""
    return args.backend or DEFAULT_LOCAL_BACKEND


def local_server(
    args: argparse.Namespace, model: str, video_root: Path, log_path: Path, key: str
) -> RewardServerProcess:
    """Start (not await) the local server of ``--backend``/``--plugin``/``--server-kwargs`` serving
    ``model``, with ``video_root`` as its ``--video-root`` (every video sent by path must lie in
    it) and ``key`` as its only API key, whatever the environment holds."""
    return RewardServerProcess(
        backend_args(served_backend(args), model, video_root, args.server_kwargs),
        log_path,
        python=server_python(served_backend(args)),
        plugins=args.plugin,
        env={API_KEY_ENV: key},
    )


@contextmanager
def scoring_endpoint(
    args: argparse.Namespace, model: str | None, video_root: Path, log_path: Path
) -> Iterator[JudgeEndpoint]:
    """Yield where to score: the given ``--endpoint`` (checked, key included), or a local server
    (started with a fresh key, awaited for ``--server-start-timeout`` s, and always stopped)."""
    if args.endpoint is not None:
        check_endpoint(args.endpoint, args.api_key_env, args.ca_bundle)
        yield JudgeEndpoint(args.endpoint, args.api_key_env)
        return
    key = secrets.token_urlsafe(32)
    # model is never None here: check_scoring_options + resolve_model see to it.
    with local_judge(args, str(model), video_root, log_path, key) as url:
        previous = os.environ.get(LOCAL_KEY_ENV)
        os.environ[LOCAL_KEY_ENV] = key  # after the judge started: no server inherits it
        try:
            yield JudgeEndpoint(url, LOCAL_KEY_ENV)
        finally:
            if previous is None:
                os.environ.pop(LOCAL_KEY_ENV, None)
            else:
                os.environ[LOCAL_KEY_ENV] = previous


@contextmanager
def local_judge(
    args: argparse.Namespace, model: str, video_root: Path, log_path: Path, key: str
) -> Iterator[str | list[str]]:
    """Yield the endpoint of the local judge once it is healthy (a list with ``--replicas`` > 1)
    and always stop it after."""
    replicas = getattr(args, "replicas", None) or 1
    if replicas > 1:
        from reward_eval.judge.replicas import local_replicas

        backend, log_dir = served_backend(args), log_path.parent / "reward_server"
        with local_replicas(args, backend, model, video_root, log_dir, key) as urls:
            print(f"[reward-eval] {replicas} local {backend} replicas on Ray: {', '.join(urls)}")
            yield urls
        return
    server = local_server(args, model, video_root, log_path, key)
    try:
        server.wait_ready(args.server_start_timeout)
        print(f"[reward-eval] local {served_backend(args)} server on {server.endpoint} (log: {log_path})")
        yield server.endpoint
    finally:
        server.stop()
