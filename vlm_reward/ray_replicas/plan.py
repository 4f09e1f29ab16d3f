"""Where each judge replica runs, and whether the cluster can take them: pure, no Ray.

A :class:`ReplicaPlan` is the ``reward_server`` block plus one :class:`ReplicaSlot` per replica
(node, address, the accelerators it may use), as a placement decided them (the training's
``cluster.component_placement``, read by the caller, or one local node). :meth:`ReplicaPlan.check`
refuses, in one sentence each, before anything starts:

- a placement that gives another number of replicas than ``reward_server.replicas``;
- a replica with another number of GPUs than ``gpus_per_replica``;
- a judge GPU that another component (actor, rollout, env) also uses: placement is by
  environment variables (RLinf reserves no GPU in Ray), so nothing else would keep them apart;
- more CPUs on a node than it has: each replica holds ``cpus_per_replica`` Ray CPUs, and a
  replica Ray cannot fit would wait forever (RLinf's workers hold none: Ray 2.60 still starts
  them where every CPU is held, checked here).

:meth:`ReplicaPlan.describe` gives the lines ``--dry-run`` and the run print.
"""

from __future__ import annotations

import shlex
import tempfile
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from vlm_reward.ray_replicas.config import RewardServerConfig
from vlm_reward.server.serving import ServingOptions
from vlm_reward.settings_flags import flag_name
from vlm_reward.tools.server_process import backend_args

PLACEMENT_KEY = "reward_server"  # the judge's name in cluster.component_placement
LOOPBACK = "127.0.0.1"


class PlanError(ValueError):
    """The replicas cannot be placed as configured; the message says why and what to change."""


@dataclass(frozen=True)
class ReplicaSlot:
    """Where one replica runs: its node and the accelerators it may use there."""

    node_rank: int
    node_ip: str
    node_id: str  # Ray's id of the node: the replica is pinned to it
    gpus: tuple[str, ...] = ()  # accelerator ids on the node; () for a judge on CPU
    # What makes exactly ``gpus`` visible to the server (e.g. CUDA_VISIBLE_DEVICES), as pairs.
    device_env: tuple[tuple[str, str], ...] = ()
    host: str = LOOPBACK  # where the server listens and the envs address it: listen_host()

    def where(self) -> str:
        """``node 0 (10.0.0.5), GPUs 6,7`` / ``..., no GPU``."""
        gpus = f"GPUs {','.join(self.gpus)}" if self.gpus else "no GPU"
        return f"node {self.node_rank} ({self.node_ip}), {gpus}"


def listen_host(node_ip: str, num_nodes: int) -> str:
    """The address a replica listens on and is addressed at: 127.0.0.1 on a one-node cluster (every
    env worker is on that machine, so nothing needs to be reachable from elsewhere), the node's
    address on a larger one (env workers on other nodes must reach it; the run's key guards it)."""
    return LOOPBACK if num_nodes == 1 else node_ip


def local_slots(
    count: int, gpus_per_replica: int, node_ip: str, node_id: str, gpu_ids: Sequence[str] = ()
) -> tuple[ReplicaSlot, ...]:
    """``count`` slots on one node (a local Ray: they listen on 127.0.0.1), each with the next
    ``gpus_per_replica`` of ``gpu_ids`` (CUDA numbering); ``PlanError`` when there are not enough."""
    need = count * gpus_per_replica
    if need > len(gpu_ids):
        raise PlanError(
            f"{count} replica(s) of {gpus_per_replica} GPU(s) each need {need} GPU(s), but this node has "
            f"{len(gpu_ids)}; start fewer replicas or give each fewer GPUs."
        )
    slots = []
    for index in range(count):
        gpus = tuple(gpu_ids[index * gpus_per_replica : (index + 1) * gpus_per_replica])
        env = (("CUDA_VISIBLE_DEVICES", ",".join(gpus)),)  # none: the server sees no GPU
        slots.append(ReplicaSlot(0, node_ip, node_id, gpus, env, listen_host(node_ip, 1)))
    return tuple(slots)


@dataclass(frozen=True)
class Node:
    """What the cluster has on one node, as Ray reports it."""

    rank: int
    ip: str
    cpus: float


@dataclass(frozen=True)
class ReplicaPlan:
    """The judge, the interpreter that runs it and one slot per replica (see the module docstring)."""

    settings: RewardServerConfig
    python: str
    slots: tuple[ReplicaSlot, ...]
    # The self-test flags of the env the replicas judge for (its success threshold and what it
    # asks: vlm_reward.server.self_test.self_test_flags), so a --self-test in server_args checks
    # the judge the way the env will ask it.
    self_test_args: tuple[str, ...] = ()

    def check(self, nodes: Sequence[Node], others: Mapping[str, Collection[tuple[int, str]]]) -> None:
        """``PlanError`` unless the slots fit the block, stay apart from ``others`` (component ->
        its ``(node rank, GPU id)`` pairs) and fit each node's CPUs."""
        self._check_counts()
        self._check_apart(others)
        self._check_cpus(nodes)

    def _check_counts(self) -> None:
        wanted, placed = self.settings.replicas, len(self.slots)
        if placed != wanted:
            raise PlanError(
                f"cluster.component_placement.{PLACEMENT_KEY} places {placed} replica(s), but "
                f"reward_server.replicas is {wanted}; make the two agree."
            )
        for index, slot in enumerate(self.slots):
            if len(slot.gpus) != self.settings.gpus_per_replica:
                raise PlanError(
                    f"cluster.component_placement.{PLACEMENT_KEY} gives replica {index} {len(slot.gpus)} "
                    f"GPU(s) ({slot.where()}), but reward_server.gpus_per_replica is "
                    f"{self.settings.gpus_per_replica}; name that many GPUs per replica (a judge on CPU: "
                    f"place it on nodes, e.g. {{node_group: node, placement: '0:0-1'}} for two on node 0)."
                )

    def _check_apart(self, others: Mapping[str, Collection[tuple[int, str]]]) -> None:
        mine = {(slot.node_rank, gpu) for slot in self.slots for gpu in slot.gpus}
        for component, used in others.items():
            shared = sorted(mine & set(used))
            if shared:
                listed = ", ".join(f"node {node} GPU {gpu}" for node, gpu in shared)
                raise PlanError(
                    f"the judge's GPUs overlap the {component}'s ({listed}); give the judge GPUs of its "
                    f"own in cluster.component_placement (e.g. 'actor,env,rollout: 0-5' and "
                    f"'{PLACEMENT_KEY}: 6-7' on a node of 8)."
                )

    def _check_cpus(self, nodes: Sequence[Node]) -> None:
        per_node = Counter(slot.node_rank for slot in self.slots)
        by_rank = {node.rank: node for node in nodes}
        each = self.settings.cpus_per_replica
        for rank, count in sorted(per_node.items()):
            node = by_rank[rank]
            if count * each > node.cpus:
                raise PlanError(
                    f"{count} replica(s) of {each:g} CPU(s) each on node {rank} ({node.ip}) need "
                    f"{count * each:g} CPUs, but it has {node.cpus:g}; lower reward_server.cpus_per_replica "
                    "or place the replicas on more nodes."
                )

    def server_args(self) -> list[str]:
        """The server options of every replica after ``--host``/``--port`` (no key: that travels
        in the environment)."""
        s = self.settings
        # Without video_root the env sends videos inline; the server still needs a root to refuse
        # paths outside of it: its own default, the temp dir.
        root = s.video_root or tempfile.gettempdir()
        args = backend_args(s.backend, str(s.model), root, s.backend_kwargs)
        drain = [flag_name(ServingOptions, "drain_timeout_s"), f"{s.drain_timeout_s:g}"]
        return [*args, *drain, *self.self_test_args, *s.server_args]

    def describe(self) -> list[str]:
        """What ``--dry-run`` prints and the run logs before starting the replicas."""
        s = self.settings
        restarts = "without limit" if s.max_restarts < 0 else f"up to {s.max_restarts} time(s)"
        videos = f"by path under {s.video_root}" if s.video_root else "inline"
        lines = [
            f"{len(self.slots)} replica(s) of {s.backend} serving {s.model!r}, {s.gpus_per_replica} GPU(s) "
            f"and {s.cpus_per_replica:g} CPU(s) each, run by {self.python}; Ray restarts a replica "
            f"{restarts}; videos sent {videos}"
        ]
        lines += [
            f"  replica {index}: {slot.where()}, listening on {slot.host}"
            for index, slot in enumerate(self.slots)
        ]
        if self.self_test_args:
            flags = shlex.join(self.self_test_args)
            lines.append(f"  their self-test flags (with --self-test in server_args): {flags}")
        return lines
