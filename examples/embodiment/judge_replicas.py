"""The training's judges on its own Ray cluster: the ``reward_server`` block of the training config.

With ``reward_server.enable`` the training entry (and ``--dry-run``) does, in order:

1. :func:`judges_or_exit` (:func:`judge_settings`), before Ray starts: the block is validated and
   its judge checked (backend, model path, interpreter; :mod:`vlm_reward.ray_replicas.config`),
   and some env's ``reward_model`` must be on to use it. One sentence on failure.
2. :func:`validated_or_exit`: RLinf's ``validate_cfg``, which starts or joins the Ray cluster; a
   judge placement RLinf cannot parse is reported naming the entry.
3. :func:`cluster_plan`: ``cluster.component_placement.reward_server`` read by RLinf's own
   placement (``HybridComponentPlacement``) into one slot per replica (node, GPUs, the device
   variables RLinf would give a worker there) and checked against the cluster
   (:meth:`~vlm_reward.ray_replicas.plan.ReplicaPlan.check`): as many replicas as the block
   says, its GPU count, no GPU shared with the actor, rollout or env, CPUs the nodes have.
4. :func:`judges_on_cluster`: one fresh key for the run, published for the env workers
   (:mod:`vlm_reward.ray_replicas.run_key`: they set :data:`RUN_KEY_ENV` in their own process;
   no environment Ray writes down holds it) and given to the replicas; starts them
   (:class:`~vlm_reward.ray_replicas.group.ReplicaGroup`), waits for every ``/health``, prints
   where each runs, points every env that scores at them (:func:`wire_envs`: only the variable's
   name reaches the config), and on the way out (training ended, failed or was interrupted;
   SIGTERM included) drains and stops them all.

Without the block nothing here runs: hand-started servers and endpoint lists work as before.
"""

from __future__ import annotations

import contextlib
import secrets
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from vlm_reward.client.config import RewardModelConfig
from vlm_reward.exit_statuses import EXIT_BAD_SETTINGS, EXIT_TERMINATED
from vlm_reward.ray_replicas.config import RewardServerConfig
from vlm_reward.ray_replicas.plan import (
    PLACEMENT_KEY,
    Node,
    PlanError,
    ReplicaPlan,
    ReplicaSlot,
    listen_host,
)
from vlm_reward.ray_replicas.replica import PREFIX
from vlm_reward.server.self_test import self_test_flags

RUN_KEY_ENV = "VLM_REWARD_RUN_KEY"  # the variable that holds this run's key (its NAME goes in configs)
ENV_BLOCKS = ("train", "eval")


@dataclass(frozen=True)
class Judges:
    """The validated block, the interpreter that will run its servers, and their self-test
    flags: the served env's success threshold and what it asks the judge."""

    settings: RewardServerConfig
    python: str
    self_test_args: tuple[str, ...] = ()


def served_envs(cfg: DictConfig) -> list[str]:
    """The env blocks (``train``, ``eval``) whose ``reward_model`` is on."""
    return [
        name
        for name in ENV_BLOCKS
        if OmegaConf.select(cfg, f"env.{name}.reward_model.enable", default=False) is True
    ]


def judge_settings(cfg: DictConfig) -> Judges | None:
    """The ``reward_server`` block when it is on (``None`` when off or absent); ``ValueError`` in
    one sentence when it is wrong or serves no env."""
    settings = RewardServerConfig.from_mapping(cfg.get("reward_server", None))
    if not settings.enable:
        return None
    python = settings.check_judge()
    envs = served_envs(cfg)
    if not envs:
        raise ValueError(
            "reward_server.enable is true but no env scores episodes with it: set "
            "env.train.reward_model.enable=True (or env.eval's)."
        )
    if settings.video_root is not None:
        _check_video_dirs(cfg, envs, settings.video_root)
    return Judges(settings, python, served_self_test(cfg, envs[0]))


def served_self_test(cfg: DictConfig, env: str) -> tuple[str, ...]:
    """The replicas' self-test flags for env ``env`` (``train`` when it scores): a ``--self-test``
    in ``server_args`` then judges its set with the env's threshold and request."""
    block = RewardModelConfig.from_mapping(cfg.env[env].reward_model)
    return tuple(self_test_flags(block.success_threshold, block.judge_request()))


def _check_video_dirs(cfg: DictConfig, envs: list[str], video_root: str) -> None:
    """``ValueError`` if an env writes its videos outside the replicas' shared video root."""
    root = Path(video_root).resolve()
    for name in envs:
        videos = cfg.env[name].reward_model.get("temp_video_dir", None)
        if videos is not None and not Path(str(videos)).resolve().is_relative_to(root):
            raise ValueError(
                f"env.{name}.reward_model.temp_video_dir {videos!r} is outside reward_server.video_root "
                f"{video_root!r}: the replicas would refuse every video; put it inside, or leave it null "
                "(then it is the video root)."
            )


def judges_or_exit(cfg: DictConfig) -> Judges | None:
    """:func:`judge_settings`; a wrong block ends the run here, before Ray starts, with exit
    status 2 and its sentence."""
    try:
        return judge_settings(cfg)
    except (ValueError, TypeError) as exc:
        say(f"FAILED: {exc}", err=True)
        raise SystemExit(EXIT_BAD_SETTINGS) from None


def validate_with_judges(cfg: DictConfig, judges: Judges | None) -> DictConfig:
    """RLinf's ``validate_cfg`` (it starts or joins the Ray cluster); a judge placement that RLinf
    cannot parse there is a ``PlanError`` naming the entry instead of RLinf's assertion."""
    from rlinf.config import validate_cfg

    try:
        return validate_cfg(cfg)
    except AssertionError:
        reason = placement_failure(cfg) if judges is not None else None
        if reason is None:
            raise
        raise PlanError(reason) from None


def validated_or_exit(cfg: DictConfig, judges: Judges | None) -> DictConfig:
    """:func:`validate_with_judges`; a ``PlanError`` ends the run with exit status 2."""
    try:
        return validate_with_judges(cfg, judges)
    except PlanError as exc:
        say(f"FAILED: {exc}", err=True)
        raise SystemExit(EXIT_BAD_SETTINGS) from None


def cluster_plan(cfg: DictConfig, judges: Judges) -> ReplicaPlan:
    """The replicas' slots from RLinf's placement of ``cluster.component_placement.reward_server``,
    checked against the cluster (Ray must be up); ``PlanError`` in one sentence."""
    from rlinf.scheduler import Cluster
    from rlinf.utils.placement import HybridComponentPlacement

    entry = cfg.cluster.component_placement.get(PLACEMENT_KEY, None)
    if entry is None:
        raise PlanError(
            f"reward_server is on but cluster.component_placement has no {PLACEMENT_KEY!r} entry: name where "
            f"its replicas go, e.g. '{PLACEMENT_KEY}: 6-7' (GPUs 6 and 7) or '{PLACEMENT_KEY}: 0:0-1' (two "
            "replicas on node 0 of a cluster without GPUs)."
        )
    cluster = Cluster()
    try:
        placement = HybridComponentPlacement(cfg, cluster)
        judge = placement.get_strategy(PLACEMENT_KEY).get_placement(cluster)
        others = {
            name: _gpus_of(placement.get_strategy(name).get_placement(cluster))
            for name in placement.components
            if name != PLACEMENT_KEY
        }
    except (AssertionError, IndexError, ValueError) as exc:
        raise PlanError(_unplaceable(entry, exc)) from None
    nodes = [cluster.get_node_info(rank) for rank in range(cluster.num_nodes)]
    slots = tuple(_slot(p, cluster) for p in judge)
    plan = ReplicaPlan(judges.settings, judges.python, slots, judges.self_test_args)
    plan.check([Node(n.node_rank, n.node_ip, float(n.num_cpus)) for n in nodes], others)
    return plan


def _unplaceable(entry: Any, exc: BaseException) -> str:
    entry = OmegaConf.to_container(entry) if isinstance(entry, DictConfig) else entry
    reason = " ".join(str(exc).split())
    return f"cluster.component_placement.{PLACEMENT_KEY} {entry!r} cannot be placed on this cluster: {reason}"


def placement_failure(cfg: DictConfig) -> str | None:
    """Why the judge's placement entry alone cannot be placed (``None`` if it can): for turning
    RLinf's assertion inside ``validate_cfg`` into a sentence that names the entry."""
    from rlinf.scheduler import Cluster
    from rlinf.scheduler.placement import ComponentPlacement

    entry = cfg.cluster.component_placement.get(PLACEMENT_KEY, None)
    if entry is None:
        return None
    alone = OmegaConf.create({"cluster": {"component_placement": {PLACEMENT_KEY: entry}}})
    try:
        ComponentPlacement(alone, Cluster())
    except (AssertionError, IndexError, ValueError) as exc:
        return _unplaceable(entry, exc)
    return None


def _slot(placement: Any, cluster: Any) -> ReplicaSlot:
    """A slot from one of RLinf's ``Placement``s: a placement on accelerators gives the replica
    exactly those (RLinf's device variables for them); one on nodes gives it none (all hidden). It
    listens on 127.0.0.1 on a one-node cluster, on its node's address otherwise (``listen_host``)."""
    from rlinf.scheduler.hardware import AcceleratorUtil

    node = cluster.get_node_info(placement.cluster_node_rank)
    gpus = tuple(placement.visible_accelerators) if placement.local_hardware_ranks else ()
    device_env = AcceleratorUtil.get_accelerator_env_var(placement.accelerator_type, list(gpus))
    return ReplicaSlot(
        node_rank=node.node_rank,
        node_ip=node.node_ip,
        node_id=node.ray_id,
        gpus=gpus,
        device_env=tuple(sorted(device_env.items())),
        host=listen_host(node.node_ip, cluster.num_nodes),
    )


def _gpus_of(placements: list[Any]) -> set[tuple[int, str]]:
    """``(node rank, GPU id)`` of every accelerator a component's placement uses."""
    placed = [p for p in placements if p.local_hardware_ranks]
    return {(p.cluster_node_rank, gpu) for p in placed for gpu in p.visible_accelerators}


def wire_envs(cfg: DictConfig, endpoints: list[str], settings: RewardServerConfig) -> list[str]:
    """Point every env that scores at ``endpoints`` with the run's key variable; returns the
    lines saying so. Videos go inline unless ``reward_server.video_root`` is shared."""
    lines = []
    for name in served_envs(cfg):
        with open_dict(cfg):
            block = cfg.env[name].reward_model
            block.endpoint = list(endpoints)
            block.api_key_env = RUN_KEY_ENV
            block.backend = settings.canonical_backend
            block.send_video_inline = settings.video_root is None
            if settings.video_root is not None and block.get("temp_video_dir", None) is None:
                block.temp_video_dir = settings.video_root  # where the replicas read videos from
        lines.append(
            f"env.{name}.reward_model: endpoint {list(endpoints)}, api_key_env {RUN_KEY_ENV}, backend "
            f"{block.backend}, send_video_inline {block.send_video_inline}"
        )
    return lines


@contextlib.contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """SIGTERM (a scheduler cancelling the job) unwinds like Ctrl-C, so the replicas are stopped."""

    def _exit(signum: int, frame: Any) -> None:
        raise SystemExit(EXIT_TERMINATED)  # SIGTERM is the only signal handled here

    previous = signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def ray_session_dir() -> str:
    """The session dir of the Ray node this driver is on (where Ray keeps its logs)."""
    import ray

    node = getattr(ray._private.worker, "_global_node", None)  # private API, read only
    return node.get_session_dir_path() if node is not None else "(unknown)"


def say(line: str, err: bool = False) -> None:
    """Print a ``[reward_server]`` line; never raises (stdout may be a pipe that is gone)."""
    with contextlib.suppress(OSError, ValueError):
        print(f"{PREFIX} {line}", file=sys.stderr if err else sys.stdout, flush=True)


@contextlib.contextmanager
def judges_on_cluster(cfg: DictConfig, judges: Judges | None) -> Iterator[list[str]]:
    """Start the replicas, point the envs at them, yield their endpoints; always drain and stop
    them on the way out (see the module docstring). A plan the cluster cannot take or a replica
    that does not start ends the run before training (``SystemExit(2)``, one sentence). With
    ``judges`` ``None`` it does nothing and yields ``[]``."""
    if judges is None:
        yield []
        return
    from vlm_reward.ray_replicas import run_key
    from vlm_reward.ray_replicas.group import ReplicaGroup, ReplicaStartError, stopped_line

    try:
        plan = cluster_plan(cfg, judges)
    except PlanError as exc:
        say(f"FAILED: {exc}", err=True)
        raise SystemExit(EXIT_BAD_SETTINGS) from None
    for line in plan.describe():
        say(line)
    key = secrets.token_urlsafe(32)  # this run's only key: the replicas', and the env workers'
    group = ReplicaGroup(plan, Path(str(cfg.runner.logger.log_path)) / "reward_server", key)
    with _sigterm_as_exit():
        run_key.publish(RUN_KEY_ENV, key)
        try:
            try:
                infos = group.start()
            except ReplicaStartError as exc:
                say(f"FAILED: {exc}", err=True)
                raise SystemExit(EXIT_BAD_SETTINGS) from None
            for info in infos:
                say(info.line().removeprefix(f"{PREFIX} "))
            say(f"{len(infos)} replica(s) healthy; Ray's logs of their actors: {ray_session_dir()}/logs")
            for line in wire_envs(cfg, group.endpoints, judges.settings):
                say(line)
            yield group.endpoints
        finally:
            codes = group.stop()  # first: printing may fail once the output pipe is gone
            run_key.withdraw(RUN_KEY_ENV)
            say(stopped_line(codes).removeprefix(f"{PREFIX} "))
