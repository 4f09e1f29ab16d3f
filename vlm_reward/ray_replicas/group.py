"""A :class:`~.plan.ReplicaPlan` brought up on Ray: start, wait until every replica is healthy, stop.

:class:`ReplicaGroup` needs a connected Ray (the training's cluster, or a local one) and does:

1. picks a free port for each replica on its own node (a small task pinned there), so a
   replica that Ray restarts comes back on the same address;
2. creates one :class:`~.replica.RewardReplica` actor per slot, pinned to the slot's node
   (``NodeAffinitySchedulingStrategy``, not soft), holding ``cpus_per_replica`` Ray CPUs and no
   Ray GPU: which GPUs a replica uses is the placement's business (its device variables), as
   for RLinf's own workers, which reserve none in Ray either. Ray restarts a replica whose
   process dies up to ``max_restarts`` times; a call made to it meanwhile waits for the restart;
3. waits for every replica's ``/health`` (``start_timeout_s``); the first that fails stops the
   group and raises :class:`ReplicaStartError` with that server's own sentence;
4. :meth:`ReplicaGroup.stop` asks every replica to drain at once, waits up to the drain
   timeout plus margin, then kills the actors (no restart); their servers die with them.

The key is an argument of each actor's constructor (Ray keeps it to restart the actor), never
an option or environment variable of the actor, which Ray's dashboard would show.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from vlm_reward.ray_replicas.plan import ReplicaPlan
from vlm_reward.ray_replicas.replica import PREFIX, ReplicaInfo, ReplicaSpec, RewardReplica
from vlm_reward.tools.server_process import ServerStartError, free_port, stop_grace

try:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError:  # pragma: no cover - the message is the point
    raise ImportError(
        "replicas on a Ray cluster need Ray: pip install 'ray==2.60.0' (the training's venv has it)"
    ) from None

_WAIT_MARGIN_S = 30.0  # beyond start_timeout_s: Ray starting the actor's process


class ReplicaStartError(ServerStartError):
    """A replica did not get healthy; the message is the server's own reason (or Ray's)."""


@ray.remote(num_cpus=0)
def _free_ports(host: str, count: int) -> list[int]:
    """``count`` distinct ports nothing listens on at ``host``, picked on that host's node."""
    ports: set[int] = set()
    while len(ports) < count:
        ports.add(free_port(host))
    return sorted(ports)


def _pinned(node_id: str) -> NodeAffinitySchedulingStrategy:
    return NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)


def this_node() -> tuple[str, str, list[str]]:
    """``(address, Ray node id, GPU ids)`` of the node this process runs on (Ray connected); the
    GPU ids are those Ray counts there, numbered as ``CUDA_VISIBLE_DEVICES`` shows them."""
    node_id = ray.get_runtime_context().get_node_id()
    resources = next(n["Resources"] for n in ray.nodes() if n["NodeID"] == node_id)
    count = int(resources.get("GPU", 0))
    visible = [g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.strip()]
    gpus = visible[:count] if visible else [str(i) for i in range(count)]
    return ray.util.get_node_ip_address(), node_id, gpus


def start_failure(exc: BaseException) -> str:
    """The gist of why an actor's creation failed: the last ``ServerStartError: ...`` line of
    Ray's error (the server's own sentence), else its last line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in reversed(lines):
        if "ServerStartError: " in line:
            return line.split("ServerStartError: ", 1)[1]
    return lines[-1] if lines else type(exc).__name__


class ReplicaGroup:
    """The replicas of ``plan`` as Ray actors (see the module docstring). Use as a context
    manager, or :meth:`start` then :meth:`stop` in a ``finally``."""

    def __init__(self, plan: ReplicaPlan, log_dir: Path, api_key: str) -> None:
        self.plan, self.log_dir, self._key = plan, Path(log_dir), api_key
        self.run_id = secrets.token_hex(4)  # actor names stay unique on a shared cluster
        self.actors: list[Any] = []
        self.infos: list[ReplicaInfo] = []

    @property
    def endpoints(self) -> list[str]:
        """The ``/score`` URLs of the replicas that came up, in replica order."""
        return [info.endpoint for info in self.infos]

    def specs(self, ports: list[int]) -> list[ReplicaSpec]:
        """One spec per slot, with the ports picked on each node."""
        settings, args = self.plan.settings, tuple(self.plan.server_args())
        return [
            ReplicaSpec(
                index=index,
                python=self.plan.python,
                args=args,
                plugins=tuple(settings.plugins),
                env=slot.device_env,
                host=slot.host,
                port=port,
                gpus=slot.gpus,
                log_path=str(self.log_dir / f"replica{index}.log"),
                start_timeout_s=settings.start_timeout_s,
            )
            for index, (slot, port) in enumerate(zip(self.plan.slots, ports, strict=True))
        ]

    def _ports(self) -> list[int]:
        by_node: dict[str, list[int]] = defaultdict(list)
        for index, slot in enumerate(self.plan.slots):
            by_node[slot.node_id].append(index)
        ports = [0] * len(self.plan.slots)
        for node_id, indices in by_node.items():
            host = self.plan.slots[indices[0]].host
            picked = ray.get(
                _free_ports.options(scheduling_strategy=_pinned(node_id)).remote(host, len(indices))
            )
            for index, port in zip(indices, picked, strict=True):
                ports[index] = port
        return ports

    def start(self) -> list[ReplicaInfo]:
        """Start every replica and wait until all answer ``/health``; ``ReplicaStartError`` (after
        stopping the rest) if one does not."""
        settings = self.plan.settings
        actor_cls = ray.remote(RewardReplica)
        for spec, slot in zip(self.specs(self._ports()), self.plan.slots, strict=True):
            options = {
                "name": f"reward_server_{self.run_id}_{spec.index}",
                "max_restarts": settings.max_restarts,
                "max_task_retries": -1,  # a call made while it restarts waits for the restart
                "num_cpus": settings.cpus_per_replica,
                "num_gpus": 0,
                "scheduling_strategy": _pinned(slot.node_id),
            }
            self.actors.append(actor_cls.options(**options).remote(spec, self._key))
        try:
            self.infos = self._await([actor.info.remote() for actor in self.actors])
        except BaseException:
            self.stop()
            raise
        return self.infos

    def _await(self, refs: list[Any]) -> list[ReplicaInfo]:
        index_of = {ref: index for index, ref in enumerate(refs)}
        pending, infos = list(refs), [None] * len(refs)
        timeout = self.plan.settings.start_timeout_s + _WAIT_MARGIN_S
        deadline = time.monotonic() + timeout
        while pending:
            left = max(deadline - time.monotonic(), 0.0)
            ready, pending = ray.wait(pending, num_returns=1, timeout=left)
            if not ready:
                waiting = ", ".join(str(index_of[ref]) for ref in pending)
                raise ReplicaStartError(
                    f"replica(s) {waiting} not healthy after {timeout:g} s (reward_server.start_timeout_s "
                    f"{self.plan.settings.start_timeout_s:g} + Ray's start); see {self.log_dir}"
                )
            index = index_of[ready[0]]
            try:
                infos[index] = ray.get(ready[0])
            except ray.exceptions.RayError as exc:
                raise ReplicaStartError(f"replica {index} did not start: {start_failure(exc)}") from None
        return infos  # type: ignore[return-value]

    def stop(self) -> list[int | None]:
        """Drain every replica at once, then end the actors; each server's exit status (``None``:
        it did not answer in time and was killed with its actor)."""
        grace = stop_grace(self.plan.server_args())
        refs = []
        for actor in self.actors:
            with contextlib.suppress(Exception):  # an actor that is dead or restarting
                refs.append(actor.stop.remote())
        if refs:
            ray.wait(refs, num_returns=len(refs), timeout=grace)
        codes: list[int | None] = []
        for ref in refs:
            try:
                codes.append(ray.get(ref, timeout=0))
            except Exception:
                codes.append(None)
        for actor in self.actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        self.actors = []
        return codes

    def __enter__(self) -> ReplicaGroup:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stopped_line(codes: list[int | None]) -> str:
    """What :meth:`ReplicaGroup.stop` did, for the run's output."""
    drained = sum(1 for code in codes if code == 0)
    return (
        f"{PREFIX} stopped {len(codes)} replica(s): {drained} drained (exit 0), "
        f"{len(codes) - drained} ended otherwise (exit statuses {codes})"
    )
