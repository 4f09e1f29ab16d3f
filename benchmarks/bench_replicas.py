"""Benchmark 9: N reward-server replicas behind one env config vs one server.

A judge that serves one request at a time: each server runs the ``fixed_score`` test
backend sleeping ``--latency`` per ``generate`` call with ``--max-batch-size 1`` (a GPU
already saturated by one request; batching does not help it). ``--episodes`` episodes end
together and are scored with ``RewardClient.score_many`` (``max_concurrency`` = the
episodes), per repetition side by side:

* ``1 server``: ``reward_model.endpoint`` is one URL;
* ``N replicas``: ``endpoint`` lists ``--replicas`` servers (least in flight first);
* ``N replicas, one dead``: the same list with one URL nobody listens on: the first
  request to it fails over at once, and the dead replica then sits out its cool-down.

Throughput is episodes per second of ``score_many``; ideal speed-up = N (and N-1 with one
dead). Episodes are short (8 frames of 128x128) so the client's encoding is not what is
measured.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_replicas.py [--repeats 5] [--replicas 3]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from benchmarks.harness import (
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
)
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.scoring import FinishedEpisode, RewardClient, ScoreResult
from vlm_reward.tools.server_process import free_port

FRAMES, SIZE = 8, 128


def _add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--replicas", type=int, default=3, help="servers behind one config (default 3)")
    parser.add_argument("--episodes", type=int, default=24, help="episodes ending together (default 24)")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per generate call (default 0.5)")


def _client(endpoints: list[str], episodes: int, tmp: Path) -> RewardClient:
    cfg = RewardModelConfig(
        enable=True,
        endpoint=endpoints if len(endpoints) > 1 else endpoints[0],
        backend="fixed_score",
        temp_video_dir=str(tmp),
        max_concurrency=episodes,
        max_retries=0,
        timeout=300,
    )
    return RewardClient(cfg)


def _scored(results: list[ScoreResult]) -> None:
    failed = [r.error for r in results if r.fallback]
    if failed:
        raise RuntimeError(f"{len(failed)} episodes fell back; first error: {failed[0]}")


def run(args: argparse.Namespace, tmp: Path) -> None:
    frames = list(synthetic_frames(FRAMES, size=SIZE))
    episodes = [FinishedEpisode(f"put object {i} away", frames, False) for i in range(args.episodes)]
    server_args = ["--backend", "fixed_score", "--model", "m", "--video-root", str(tmp)]
    server_args += ["--max-batch-size", "1", "--backend-kwargs", f'{{"generate_seconds": {args.latency}}}']
    servers = [RewardServer(server_args, tmp / f"server{i}.log") for i in range(args.replicas)]
    clients: dict[str, RewardClient] = {}
    try:
        for server in servers:
            server.wait_ready()
        endpoints = [s.endpoint for s in servers]
        dead = f"http://127.0.0.1:{free_port()}/score"
        clients = {
            "1 server": _client(endpoints[:1], args.episodes, tmp),
            f"{args.replicas} replicas": _client(endpoints, args.episodes, tmp),
            f"{args.replicas} replicas, one dead": _client([dead, *endpoints[1:]], args.episodes, tmp),
        }
        for client in clients.values():  # connections and the servers' first requests
            _scored(client.score_many(episodes[:2]))
        measures = {
            name: (lambda c=client: timed(lambda: _scored(c.score_many(episodes))))
            for name, client in clients.items()
        }
        samples = interleave(measures, repeats=args.repeats, warmup=0)
        counts = {name: client.replicas.snapshot() for name, client in clients.items()}
        failovers = {name: client.replicas.failovers for name, client in clients.items()}
    finally:
        for client in clients.values():
            client.close()
        for server in servers:
            server.stop()
    report(samples, counts, failovers, args)


def report(
    samples: dict[str, list[float]], counts: dict, failovers: dict[str, int], args: argparse.Namespace
) -> None:
    names = list(samples)
    rows = [
        Row(f"{name}: episodes/s", Stats.of([args.episodes / s for s in samples[name]]), "1/s")
        for name in names
    ]
    for name in names[1:]:
        rows.append(
            Row(f"speed-up, {name} / 1 server", Stats.of(ratios(samples[names[0]], samples[name])), "x")
        )
    print_table(
        f"Scoring {args.episodes} episodes that end together, backend {args.latency:g} s per call, "
        f"--max-batch-size 1, {args.repeats} interleaved repetitions",
        rows,
    )
    print("\nrequests per replica (warm-up included) and failovers:")
    for name in names:
        per_replica = ", ".join(str(c["requests"]) for c in counts[name].values())
        print(f"  {name}: [{per_replica}], {failovers[name]} failovers")


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=5, add=_add_args)
    if args.replicas < 2 or args.episodes < 2:
        raise SystemExit(
            f"--replicas and --episodes must be at least 2, got {args.replicas}, {args.episodes}."
        )
    if not args.latency > 0:
        raise SystemExit(f"--latency must be > 0 seconds, got {args.latency}.")
    header(f"Benchmark 9: {args.replicas} reward-server replicas vs one")
    with tempfile.TemporaryDirectory(prefix="bench-replicas-") as tmp:
        run(args, Path(tmp))


if __name__ == "__main__":
    main()
