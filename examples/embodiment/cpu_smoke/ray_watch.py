"""What the CPU runs' supervision asks of Ray: its dead actors, its processes, who started it.

The watchdog of :mod:`.guard` runs in a thread of the training driver; these helpers keep what
it needs from Ray apart from the decisions it makes with it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

# Ray reasons for an actor death that nobody needs to hear about: RLinf kills its helper actors.
INTENDED_DEATHS = ("RAY_KILL", "OUT_OF_SCOPE", "INTENDED_USER_EXIT", "INTENDED_SYSTEM_EXIT")


@dataclass(frozen=True)
class RayWatch:
    """How the watchdog reaches Ray without Ray's client: the dashboard's state API over HTTP.

    Ray's core worker ends the whole process (exit 1, no message) when a thread touches it while
    another thread shuts Ray down, so the watchdog thread only speaks HTTP. Built in the main
    thread once Ray is up.
    """

    dashboard_url: str
    headers: dict[str, str]

    @classmethod
    def current(cls) -> RayWatch:
        import ray
        from ray._private.authentication.http_token_authentication import get_auth_headers_if_auth_enabled

        return cls("http://" + ray._private.worker.get_dashboard_url(), get_auth_headers_if_auth_enabled({}))

    def dead_actors(self) -> list[str]:
        """One line per Ray actor that died for a reason other than being killed on purpose."""
        import requests

        params = {"filter_keys": "state", "filter_predicates": "=", "filter_values": "DEAD", "detail": "1"}
        response = requests.get(
            self.dashboard_url + "/api/v0/actors", params=params, headers=self.headers, timeout=10
        )
        response.raise_for_status()
        return [line for a in response.json()["data"]["result"]["result"] if (line := death_line(a))]


def started_ray_here() -> bool:
    """Whether this process started the Ray cluster it is on (``RAY_ADDRESS=local``)."""
    import ray

    return bool(getattr(getattr(ray._private.worker, "_global_node", None), "head", False))  # private, read


def kill_own_processes() -> None:
    """SIGKILL every process this driver started: its Ray cluster, the workers, LIBERO's envs.

    Only for a cluster this run started. A driver that exits without ``ray.shutdown()`` leaves
    Ray's dashboard and runtime-env agents running for minutes, and RLinf's own shutdown races
    with its threads (see :class:`RayWatch`), so the whole process tree goes at once.
    """
    import psutil

    for process in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            process.kill()


def death_line(actor: dict[str, Any]) -> str | None:
    """One line on a dead actor of Ray's state API: who, how it died, the gist of the error.

    ``None`` for an actor killed on purpose: RLinf kills its own helper actors. For an exception
    in ``__init__`` the gist is the traceback's last line; for other deaths (a crash, Ray's
    memory monitor) the message's first line.
    """
    cause = actor.get("death_cause") or {}
    context = cause.get("actor_died_error_context") or {}
    if context.get("reason") in INTENDED_DEATHS:
        return None
    who = f"{actor.get('name') or actor.get('class_name')} (pid {actor.get('pid')})"
    creation = cause.get("creation_task_failure_context")
    if creation:
        lines = [line.strip() for line in str(creation.get("formatted_exception_string", "")).splitlines()]
        return (
            f"{who} died in __init__: {next((line for line in reversed(lines) if line), 'no reason given')}"
        )
    if cause.get("oom_context"):
        what, message = "was killed by Ray's memory monitor", cause["oom_context"].get("error_message", "")
    else:
        what = f"died ({context.get('reason', 'unknown reason')})"
        message = context.get("error_message", str(cause))
    first = next((line.strip() for line in str(message).splitlines() if line.strip()), "no reason given")
    return f"{who} {what}: {first}"
