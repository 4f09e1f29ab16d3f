"""Benchmark 11 (issue 32): judge replicas that Ray places, restarts and stops, against hand-started ones.

The judge serves one request at a time: the ``fixed_score`` test backend sleeping ``--latency``
per ``generate`` call with ``--max-batch-size 1`` (a GPU saturated by one request), as in
``bench_replicas.py``. On a private cluster of this machine, brought up as the training brings
it up (RLinf's ``Cluster``), with ``vlm_reward.ray_replicas`` (0 GPUs, the run's key in every
server's environment, each listening on the node's address):

* throughput: ``--episodes`` episodes that end together, scored with ``RewardClient.score_many``
  against 1 and against ``--replicas`` Ray-placed replicas, side by side per repetition;
  target: ``--replicas`` give >= 0.95 x N the episodes per second of one;
* start-up: ``--replicas`` servers from nothing to every ``/health`` 200, started by hand
  (``RewardServerProcess`` on 127.0.0.1, as a person or ``bench_replicas.py`` does) and placed by
  Ray (``ReplicaGroup.start`` on the running cluster: a port task, the actors, the servers),
  interleaved with RLinf launching as many trivial workers of its own (``Worker.create_group()
  .launch()``, no server: a lower bound of a replica built as an RLinf worker); plus the one-time
  start of the cluster;
* restart: a replica's server killed (SIGKILL), until the same endpoint answers ``/health`` 200
  again (Ray restarts the actor, which starts the server on the same port); and whether an RLinf
  worker whose process is killed comes back;
* the memory a replica's supervising actor adds to its server (RSS).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_ray_replicas.py [--repeats 5] [--replicas 3]
"""

from __future__ import annotations

import argparse
import os
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from benchmarks.harness import (
    FAKE_BACKENDS,
    RewardServer,
    Row,
    Stats,
    header,
    interleave,
    parse_args,
    print_table,
    ratios,
    synthetic_frames,
    timed,
    verdict,
)
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.scoring import FinishedEpisode, RewardClient, ScoreResult
from vlm_reward.protocol import API_KEY_ENV
from vlm_reward.ray_replicas.config import RewardServerConfig
from vlm_reward.ray_replicas.plan import ReplicaPlan, local_slots
from vlm_reward.tools.server_process import health_url, probe_health

FRAMES, SIZE = 8, 128
KEY_ENV = "BENCH_RAY_REPLICAS_KEY"  # the client reads the run's key from here
TARGET = 0.95  # of the ideal N x


def _add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--replicas", type=int, default=3, help="replicas against one (default 3)")
    parser.add_argument("--episodes", type=int, default=24, help="episodes ending together (default 24)")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per generate call (default 0.5)")
    parser.add_argument("--restarts", type=int, default=3, help="replica kills to time (default 3)")


def _settings(args: argparse.Namespace, replicas: int) -> RewardServerConfig:
    return RewardServerConfig(
        enable=True,
        backend="fixed_score",
        model="m",
        plugins=[FAKE_BACKENDS],
        backend_kwargs={"generate_seconds": args.latency},
        replicas=replicas,
        gpus_per_replica=0,
        cpus_per_replica=0,
        server_args=["--max-batch-size", "1", "--log-level", "warning"],
        max_restarts=-1,
    )


def _plan(args: argparse.Namespace, replicas: int, node: tuple[str, str, list[str]]) -> ReplicaPlan:
    settings = _settings(args, replicas)
    ip, node_id, _ = node
    return ReplicaPlan(settings, settings.check_judge(), local_slots(replicas, 0, ip, node_id))


def _client(endpoints: list[str], episodes: int, tmp: Path) -> RewardClient:
    cfg = RewardModelConfig(
        enable=True,
        endpoint=endpoints if len(endpoints) > 1 else endpoints[0],
        backend="fixed_score",
        temp_video_dir=str(tmp),
        send_video_inline=True,  # as on a cluster: the replicas share no file system with the env
        max_concurrency=episodes,
        max_retries=0,
        timeout=300,
        api_key_env=KEY_ENV,
    )
    return RewardClient(cfg)


def _scored(results: list[ScoreResult]) -> None:
    failed = [r.error for r in results if r.fallback]
    if failed:
        raise RuntimeError(f"{len(failed)} episodes fell back; first error: {failed[0]}")


def _hand_started(args: argparse.Namespace, tmp: Path, key: str) -> float:
    """Seconds for ``--replicas`` hand-started servers to all answer ``/health`` 200."""
    server_args = ["--backend", "fixed_score", "--model", "m", "--video-root", str(tmp)]
    server_args += ["--max-batch-size", "1", "--backend-kwargs", f'{{"generate_seconds": {args.latency}}}']
    started = time.perf_counter()
    servers = [
        RewardServer(server_args, tmp / f"hand{i}.log", env={API_KEY_ENV: key}) for i in range(args.replicas)
    ]
    try:
        for server in servers:
            server.wait_ready()
        return time.perf_counter() - started
    finally:
        for server in servers:
            server.stop()


def _ray_placed(plan: ReplicaPlan, tmp: Path, key: str) -> float:
    """Seconds for a Ray-placed group to have every replica healthy (the cluster already up)."""
    from vlm_reward.ray_replicas.group import ReplicaGroup

    group = ReplicaGroup(plan, tmp / "startup", key)
    started = time.perf_counter()
    try:
        group.start()
        return time.perf_counter() - started
    finally:
        group.stop()


def _restart_s(endpoint: str, server_pid: int, timeout: float = 120.0) -> float:
    """SIGKILL a replica's server; seconds until its endpoint answers ``/health`` 200 again."""
    url = health_url(endpoint)
    server = psutil.Process(server_pid)
    started = time.perf_counter()
    server.kill()
    server.wait(timeout=30)
    while (reply := probe_health(url)) is None or reply.status_code != 200:
        if time.perf_counter() - started > timeout:
            raise RuntimeError(f"{endpoint} did not come back within {timeout:g} s")
        time.sleep(0.05)
    return time.perf_counter() - started


def _actor_rss_mib(server_pids: list[int]) -> list[float]:
    """RSS of each replica's supervising actor process (the server's parent), MiB."""
    return [psutil.Process(pid).parent().memory_info().rss / 2**20 for pid in server_pids]


def _probe_worker() -> type:
    """A trivial RLinf worker: what an RLinf-worker replica would cost before its server starts."""
    from rlinf.scheduler import Worker

    class Probe(Worker):
        def pid(self) -> int:
            return os.getpid()

    return Probe


def _rlinf_group(count: int, name: str) -> tuple[float, list[Any]]:
    """Seconds for RLinf to launch ``count`` trivial workers on node 0 and answer a call; the actors."""
    from rlinf.scheduler import Cluster, NodePlacementStrategy

    started = time.perf_counter()
    group = (
        _probe_worker()
        .create_group()
        .launch(Cluster(), name=name, placement_strategy=NodePlacementStrategy([0] * count))
    )
    group.pid().wait()
    return time.perf_counter() - started, [w.worker for w in group.worker_info_list]


def _rlinf_restart(name: str) -> str:
    """What happens to an RLinf worker whose process is killed: whether Ray restarts it."""
    import ray

    _, [actor] = _rlinf_group(1, name)
    psutil.Process(ray.get(actor.pid.remote())).kill()
    try:
        ray.get(actor.pid.remote(), timeout=60)
    except ray.exceptions.RayError as exc:
        return f"not restarted ({type(exc).__name__})"
    return "restarted"


def _startup(args: argparse.Namespace, big: ReplicaPlan, tmp: Path, key: str) -> dict[str, list[float]]:
    """The start-up contenders, interleaved; RLinf's trivial workers are killed after each launch."""
    import ray

    launches = iter(range(1000))

    def rlinf() -> float:
        seconds, actors = _rlinf_group(args.replicas, f"BenchProbe{next(launches)}")
        for actor in actors:
            ray.kill(actor, no_restart=True)
        return seconds

    measures = {
        "hand-started": lambda: _hand_started(args, tmp, key),
        "Ray-placed": lambda: _ray_placed(big, tmp, key),
        "RLinf workers": rlinf,
    }
    return interleave(measures, repeats=max(2, args.repeats // 2))


def _throughput(args: argparse.Namespace, groups: dict[str, Any], tmp: Path) -> dict[str, list[float]]:
    """Seconds per ``score_many`` of every episode against each (started) group, interleaved."""
    frames = list(synthetic_frames(FRAMES, size=SIZE))
    episodes = [FinishedEpisode(f"put object {i} away", frames, False) for i in range(args.episodes)]
    clients = {name: _client(g.endpoints, args.episodes, tmp) for name, g in groups.items()}
    try:
        for client in clients.values():  # connections and the servers' first requests
            _scored(client.score_many(episodes[:2]))
        measures = {
            name: (lambda c=client: timed(lambda: _scored(c.score_many(episodes))))
            for name, client in clients.items()
        }
        return interleave(measures, repeats=args.repeats, warmup=0)
    finally:
        for client in clients.values():
            client.close()


def run(args: argparse.Namespace, tmp: Path) -> None:
    import ray
    from rlinf.scheduler import Cluster

    from vlm_reward.ray_replicas.group import ReplicaGroup, this_node

    key = secrets.token_urlsafe(32)
    os.environ[KEY_ENV] = key
    os.environ["RAY_ADDRESS"] = "local"  # RLinf's Cluster starts a private cluster, as --cpu-smoke's
    started = time.perf_counter()
    Cluster(num_nodes=1)  # the training's way up: Ray and RLinf's managers
    cluster_up = time.perf_counter() - started
    try:
        node = this_node()
        big, one = _plan(args, args.replicas, node), _plan(args, 1, node)
        startup = _startup(args, big, tmp, key)
        rlinf_restart = _rlinf_restart("BenchProbeKilled")
        groups = {"1 replica": ReplicaGroup(one, tmp / "one", key), "N": ReplicaGroup(big, tmp / "big", key)}
        try:
            for group in groups.values():
                group.start()
            samples = _throughput(args, groups, tmp)
            rss = _actor_rss_mib([info.server_pid for info in groups["N"].infos])
            first, restarts = groups["N"].actors[0], []
            for _ in range(args.restarts):
                victim = ray.get(first.info.remote())  # after a restart: its new server
                restarts.append(_restart_s(victim.endpoint, victim.server_pid))
        finally:
            for group in groups.values():
                group.stop()
    finally:
        ray.shutdown()
    report(args, cluster_up, startup, samples, restarts, rss)
    print(f"an RLinf worker whose process was killed: {rlinf_restart}; a Ray-placed replica: restarted")


def report(
    args: argparse.Namespace,
    cluster_up: float,
    startup: dict[str, list[float]],
    samples: dict[str, list[float]],
    restarts: list[float],
    rss: list[float],
) -> None:
    n = args.replicas
    speedup = Stats.of(ratios(samples["1 replica"], samples["N"]))
    rows = [
        Row(
            "1 Ray-placed replica: episodes/s",
            Stats.of([args.episodes / s for s in samples["1 replica"]]),
            "1/s",
        ),
        Row(
            f"{n} Ray-placed replicas: episodes/s", Stats.of([args.episodes / s for s in samples["N"]]), "1/s"
        ),
        Row(f"speed-up, {n} replicas / 1", speedup, "x"),
    ]
    print_table(
        f"Scoring {args.episodes} episodes that end together, backend {args.latency:g} s per call, "
        f"--max-batch-size 1, {args.repeats} interleaved repetitions",
        rows,
    )
    rows = [
        Row(f"{n} hand-started servers: all healthy", Stats.of(startup["hand-started"]), "s"),
        Row(f"{n} Ray-placed replicas: all healthy", Stats.of(startup["Ray-placed"]), "s"),
        Row(
            "Ray-placed / hand-started", Stats.of(ratios(startup["Ray-placed"], startup["hand-started"])), "x"
        ),
        Row(f"RLinf: {n} trivial workers launched", Stats.of(startup["RLinf workers"]), "s"),
        Row("private cluster up (RLinf's Cluster, once)", Stats.of([cluster_up]), "s"),
        Row("replica killed -> same endpoint healthy", Stats.of(restarts), "s"),
        Row("supervising actor's RSS per replica", Stats.of(rss), "MiB"),
    ]
    print_table("Start-up, restart and overhead", rows)
    print()
    print(
        verdict(
            f"speed-up of {n} replicas",
            speedup.median,
            f">= {TARGET * n:.3g} x",
            speedup.median >= TARGET * n,
        )
    )


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=5, add=_add_args)
    if args.replicas < 2 or args.episodes < args.replicas or args.restarts < 1:
        raise SystemExit(
            f"--replicas must be >= 2, --episodes >= --replicas and --restarts >= 1; got {args.replicas}, "
            f"{args.episodes}, {args.restarts}."
        )
    if not args.latency > 0:
        raise SystemExit(f"--latency must be > 0 seconds, got {args.latency}.")
    header(f"Benchmark 11: {args.replicas} Ray-placed reward-server replicas vs one, and vs hand-started")
    with tempfile.TemporaryDirectory(prefix="bench-ray-replicas-") as tmp:
        run(args, Path(tmp))


if __name__ == "__main__":
    main()
