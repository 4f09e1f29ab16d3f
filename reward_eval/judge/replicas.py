"""``--replicas N``: a command's local judge as N servers on a private Ray cluster of this machine.

One local server judges one request at a time per GPU it holds (or per engine); a large
evaluation scores faster with several. With ``--replicas N`` (N > 1) the command starts Ray on
this machine (``address="local"``: never a cluster that happens to run here), places N replicas
of the ``--backend``/``--model`` judge with :mod:`vlm_reward.ray_replicas` (each its own server
process on this machine's address, the command's fresh key, the run dir as video root), yields
their endpoints for the env's client to spread the episodes over, and drains and stops them and
Ray on the way out. Each replica gets ``--gpus-per-replica`` GPUs of this machine (default: one
each when there are enough, else none) and its log in ``reward_server/replica<i>.log`` beside
the single server's log. A replica that does not come up, or a plan the machine cannot take, is
a :class:`~vlm_reward.tools.server_process.ServerStartError` with the reason, as for one server.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from vlm_reward.ray_replicas.config import RewardServerConfig
from vlm_reward.ray_replicas.plan import ReplicaPlan, local_slots
from vlm_reward.tools.server_process import ServerStartError


def gpus_each(requested: int | None, replicas: int, gpus: list[str]) -> int:
    """GPUs per replica: as requested, else one each when this machine has enough, else none."""
    if requested is not None:
        return requested
    return 1 if len(gpus) >= replicas else 0


@contextmanager
def local_replicas(
    args: argparse.Namespace, backend: str, model: str, video_root: Path, log_dir: Path, key: str
) -> Iterator[list[str]]:
    """Yield the endpoints of ``args.replicas`` healthy replicas (see the module docstring)."""
    import ray

    from vlm_reward.ray_replicas.group import ReplicaGroup, this_node

    ray.init(address="local", include_dashboard=False, log_to_driver=False)
    try:
        ip, node_id, gpus = this_node()
        each = gpus_each(args.gpus_per_replica, args.replicas, gpus)
        settings = RewardServerConfig(
            enable=True,
            backend=backend,
            model=model,
            backend_kwargs=dict(args.server_kwargs),
            plugins=list(args.plugin),
            replicas=args.replicas,
            gpus_per_replica=each,
            cpus_per_replica=0,
            video_root=str(video_root),
            start_timeout_s=args.server_start_timeout,
        )
        try:
            plan = ReplicaPlan(
                settings, settings.check_judge(), local_slots(args.replicas, each, ip, node_id, gpus)
            )
        except ValueError as exc:  # PlanError too
            raise ServerStartError(f"--replicas {args.replicas}: {exc}") from None
        with ReplicaGroup(plan, log_dir, key) as group:
            yield group.endpoints
    finally:
        ray.shutdown()
