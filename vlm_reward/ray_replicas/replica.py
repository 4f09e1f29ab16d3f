"""One judge replica: a reward server process on this node, supervised by a Ray actor.

:class:`RewardReplica` is the body of the actor (:mod:`.group` makes it one, pinned to its
node): its ``__init__`` starts ``python -m vlm_reward.libero_reward_server`` on the node's
address and the port its slot was given, with the run's key in the server's environment, and
returns once ``/health`` is 200 (a server that fails to start raises
:class:`~vlm_reward.tools.server_process.ServerStartError` with the server's own sentence, so
the actor's creation fails with it). Then:

- a thread waits on the server: if it exits while nobody asked it to stop (a crash, the OOM
  killer, a kill), the whole actor process ends, and Ray restarts the actor, which runs
  ``__init__`` again: same port, same key, so the env's endpoint list stays valid (the env's
  client fails over to the other replicas meanwhile);
- the server is started with ``die_with_parent`` from the actor's main thread: if the actor's
  process dies (killed, or its node's raylet goes), the kernel kills the server too;
- :meth:`RewardReplica.stop` drains the server (SIGTERM: admitted jobs finish, new ones get
  503 and fail over) and returns its exit status.

A restart prints one line (Ray forwards it to the driver's output): which replica, where, which
GPUs, the server's pid; the first start is reported by whoever started the group.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from vlm_reward.protocol import API_KEY_ENV
from vlm_reward.tools.server_process import RewardServerProcess

PREFIX = "[reward_server]"


@dataclass(frozen=True)
class ReplicaSpec:
    """What a replica's actor needs to start its server (the key is passed on its own)."""

    index: int
    python: str
    args: tuple[str, ...]  # server options after --host/--port
    plugins: tuple[str, ...]
    env: tuple[tuple[str, str], ...]  # device variables (which GPUs the server sees)
    host: str  # the node's address: the server listens there
    port: int
    gpus: tuple[str, ...]
    log_path: str  # on the replica's node
    start_timeout_s: float


@dataclass(frozen=True)
class ReplicaInfo:
    """A replica that answers: where to reach it and what it runs on."""

    index: int
    endpoint: str
    host: str
    gpus: tuple[str, ...]
    server_pid: int
    restarted: bool
    ready_s: float
    log_path: str

    def line(self) -> str:
        """One line for the run's output."""
        how = "restarted by Ray and ready" if self.restarted else "ready"
        gpus = f"GPUs {','.join(self.gpus)}" if self.gpus else "no GPU"
        return (
            f"{PREFIX} replica {self.index} {how} in {self.ready_s:.1f} s: {self.endpoint} on "
            f"{self.host}, {gpus}, server pid {self.server_pid}, log {self.log_path}"
        )


def _restarted_by_ray() -> bool:
    """Whether this actor is a restart of one that died (``False`` outside Ray)."""
    try:
        import ray
    except ImportError:
        return False
    with warnings.catch_warnings():  # Ray 2.60 warns about an id it reads inside this property
        warnings.simplefilter("ignore")
        return ray.is_initialized() and ray.get_runtime_context().was_current_actor_reconstructed


class RewardReplica:
    """A supervised reward server (see the module docstring); construct it in the actor."""

    def __init__(self, spec: ReplicaSpec, api_key: str) -> None:
        started = time.monotonic()
        self.spec = spec
        self._stopping = threading.Event()
        self.server = RewardServerProcess(
            list(spec.args),
            Path(spec.log_path),
            python=spec.python,
            plugins=spec.plugins,
            env={**dict(spec.env), API_KEY_ENV: api_key},
            port=spec.port,
            host=spec.host,
            die_with_parent=True,  # this runs in the actor's main thread, which lives as long as it
        )
        self.server.wait_ready(spec.start_timeout_s)
        self._info = ReplicaInfo(
            index=spec.index,
            endpoint=self.server.endpoint,
            host=spec.host,
            gpus=spec.gpus,
            server_pid=self.server.pid,
            restarted=_restarted_by_ray(),
            ready_s=time.monotonic() - started,
            log_path=spec.log_path,
        )
        threading.Thread(target=self._supervise, name=f"replica-{spec.index}-watch", daemon=True).start()
        if self._info.restarted:  # the first start is reported by whoever started the group
            print(self._info.line(), flush=True)

    def info(self) -> ReplicaInfo:
        """Where this replica answers (returns once ``__init__`` has, i.e. once it is healthy)."""
        return self._info

    def stop(self) -> int:
        """Drain the server and wait for it to exit (its drain timeout plus margin, then SIGKILL);
        its exit status (0: every admitted request was answered)."""
        self._stopping.set()
        return self.server.stop()

    def _supervise(self) -> None:
        code = self.server.proc.wait()
        if self._stopping.is_set():
            return
        print(
            f"{PREFIX} replica {self.spec.index}: the reward server exited with {code} "
            f"(see {self.spec.log_path}); ending this replica so that Ray restarts it",
            flush=True,
        )
        os._exit(1)  # the actor's process: Ray sees it die and restarts it (max_restarts)
