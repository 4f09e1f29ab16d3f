"""Benchmark 1: what scoring one finished episode costs the rollout, next to one LIBERO env step.

Per repetition, side by side: one ``step()`` of the project's LiberoEnv (1 env, idle
action, reward model off: the reference), the client's CPU work alone (sample 16 of N
frames, encode the MP4), and ``RewardClient.score`` end to end against two local
servers with the instant ``fixed_score`` backend: one with the default 20 ms batching
window, one with ``--max-wait-ms 0``. The episode is N real LIBERO frames (the renders
of the warm-up steps, repeated). The round trip includes the server's own work (it
decodes the video to validate it), which runs on the same CPUs.

Canaries (issue 33): a native success drawn as a canary costs the env's main thread the
counterfactual's construction (sample 16 of N frames, perturb: ``canary_counterfactual``), and
the client one more ``score`` of it, which runs on the client's threads while the chunk goes
on. Both are timed here beside the step: ``canary_build`` alone, and build + ``score`` of the
reversed clip. Per episode, multiply by ``canary_rate``, at most ``canary_max_per_chunk``
per chunk. Report only.

Target: ``score`` under 20% of one env step, per repetition, median.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_episode_end_cost.py [--repeats 40] [--frames 512]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.harness import (
    RewardServer,
    Row,
    Stats,
    header,
    idle_actions,
    interleave,
    libero_env,
    parse_args,
    print_table,
    ratios,
    timed,
    verdict,
)
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.scoring import FinishedEpisode, RewardClient, sample_frame_indices
from vlm_reward.video_io import encode_mp4
from vlm_reward.watch.canaries import canary_counterfactual

TARGET = 0.20
WARMUP_STEPS = 8  # their renders become the episode's frames


def _add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--frames", type=int, default=512, help="frames in the scored episode (N)")


def _client(server: RewardServer, video_dir: str) -> RewardClient:
    cfg = RewardModelConfig(
        enable=True, endpoint=server.endpoint, backend="fixed_score", temp_video_dir=video_dir, timeout=30
    )
    return RewardClient(cfg)


def _score(client: RewardClient, episode: FinishedEpisode) -> float:
    result = client.score(episode)
    if result.fallback:
        raise RuntimeError(f"scoring failed, the benchmark would time a fallback: {result.error}")
    return result.latency_s


def _encode_only(frames: list[np.ndarray], nframes: int, path: str) -> float:
    """The client's CPU work without the request: sample, stack, encode."""

    def work() -> None:
        picked = np.stack([frames[i] for i in sample_frame_indices(len(frames), nframes)])
        encode_mp4(picked, path, fps=4)

    seconds = timed(work)
    os.remove(path)
    return seconds


def _canary(frames: list[np.ndarray], task: str) -> FinishedEpisode:
    """What the env builds for a canary of the episode: its 16 sent frames, played backwards."""
    made = canary_counterfactual(frames, task, "reversed", 16)
    return FinishedEpisode(made.task_text, list(made.frames), native_success=False)


def _canary_score(client: RewardClient, frames: list[np.ndarray], task: str) -> float:
    """Build the canary, then score it: the seconds of both."""
    built: list[FinishedEpisode] = []
    seconds = timed(lambda: built.append(_canary(frames, task)))
    return seconds + _score(client, built[0])


def run(args: argparse.Namespace, tmp: Path) -> None:
    servers = {
        "default": RewardServer(
            ["--backend", "fixed_score", "--model", "m", "--video-root", str(tmp)], tmp / "a.log"
        ),
        "wait0": RewardServer(
            ["--backend", "fixed_score", "--model", "m", "--video-root", str(tmp), "--max-wait-ms", "0"],
            tmp / "b.log",
        ),
    }
    try:
        for server in servers.values():
            server.wait_ready()
        with libero_env(max_episode_steps=WARMUP_STEPS + args.repeats + 16) as env:
            env.reset()
            action = idle_actions(1, 1)[:, 0]
            renders = [env.step(action)[0]["main_images"][0].numpy().copy() for _ in range(WARMUP_STEPS)]
            frames = [renders[i % len(renders)] for i in range(args.frames)]
            episode = FinishedEpisode(env.task_descriptions[0], frames, native_success=False)
            clients = {name: _client(server, str(tmp)) for name, server in servers.items()}
            samples = interleave(
                {
                    "step": lambda: timed(lambda: env.step(action)),
                    "encode": lambda: _encode_only(frames, 16, str(tmp / "encode_only.mp4")),
                    "score_default": lambda: _score(clients["default"], episode),
                    "score_wait0": lambda: _score(clients["wait0"], episode),
                    "canary_build": lambda: timed(lambda: _canary(frames, episode.task_text)),
                    "canary_score": lambda: _canary_score(clients["default"], frames, episode.task_text),
                },
                repeats=args.repeats,
            )
            for client in clients.values():
                client.close()
    finally:
        for server in servers.values():
            server.stop()
    report(samples, args)


def report(samples: dict[str, list[float]], args: argparse.Namespace) -> None:
    share_default = ratios(samples["score_default"], samples["step"])
    share_wait0 = ratios(samples["score_wait0"], samples["step"])
    print_table(
        f"Episode-end client cost: 16 of {args.frames} frames (256x256), "
        f"{args.repeats} interleaved repetitions",
        [
            Row("LIBERO env step (1 env, idle action)", Stats.of(samples["step"]), "ms", 1e3),
            Row("client CPU only: sample 16 + encode MP4", Stats.of(samples["encode"]), "ms", 1e3),
            Row("score(), server --max-wait-ms 20 (default)", Stats.of(samples["score_default"]), "ms", 1e3),
            Row("score(), server --max-wait-ms 0", Stats.of(samples["score_wait0"]), "ms", 1e3),
            Row("score() / env step, default server", Stats.of(share_default), "%", 100),
            Row("score() / env step, --max-wait-ms 0", Stats.of(share_wait0), "%", 100),
            Row("canary: build (main thread)", Stats.of(samples["canary_build"]), "ms", 1e3),
            Row("canary: build + score(), default server", Stats.of(samples["canary_score"]), "ms", 1e3),
            Row(
                "canary build / env step",
                Stats.of(ratios(samples["canary_build"], samples["step"])),
                "%",
                100,
            ),
            Row(
                "canary build + score() / env step",
                Stats.of(ratios(samples["canary_score"], samples["step"])),
                "%",
                100,
            ),
        ],
    )
    median = Stats.of(share_default).median
    print()
    print(verdict("score() / env step (default server)", median, f"< {TARGET:.0%}", median < TARGET))


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=40, add=_add_args)
    if args.frames < 16:
        raise SystemExit(f"--frames must be at least 16 (16 are sampled), got {args.frames}.")
    header("Benchmark 1: episode-end client cost vs one LIBERO env step")
    with tempfile.TemporaryDirectory(prefix="bench-episode-end-") as tmp:
        run(args, Path(tmp))


if __name__ == "__main__":  # LIBERO's env processes are spawned: the guard is required
    main()
