"""Benchmark 14 (issues 39, 43): RLinf's API reward worker's requests and this project's, side by side.

The same episodes (LIBERO libero_10 renders of the main and the wrist camera at 256x256, or
``--synthetic`` frames), the same engine (vLLM on the tiny random-weight Qwen2.5-VL, on this CPU)
served twice: as this project's ``/score`` (``qwen_vl_vllm``) and as vLLM's own OpenAI server
(what RLinf's worker talks to). Per repetition, the ways of asking interleaved
(:func:`benchmarks.harness.interleave`), all envs' requests of a chunk step (or of the episode
end) sent at once and waited for:

- ``RLinf per chunk``: the buffer of RLinf's one API-reward example
  (:data:`~benchmarks.rlinf_api_request.PER_CHUNK`: ``input_interval 1``, ``min_history_size 5``):
  at every chunk end from the 5th, the latest 5 chunk ends of the main and the wrist view as 10
  JPEG data URLs, ``max_tokens`` 16. A dense progress signal, a different reward from a success
  judge;
- ``RLinf per episode``: the same buffer asked once per episode (``input_interval`` the
  episode's chunk steps, ``input_on_done true``): the last 5 chunk ends of both views at the
  episode's end. RLinf main cannot run it today (the ``{}`` history input between ticks:
  :mod:`benchmarks.rlinf_api_request`); this is what it would send;
- ``RLinf request, 16 main frames``: RLinf's request format (JPEG data URLs, ``max_tokens`` 16)
  carrying exactly this project's frames: the main view's ``DEFAULT_NFRAMES`` frames spread over
  the episode. The same view and pixels as the next two rows (RLinf's buffer itself holds only
  the latest ``history_size`` chunk ends, so it cannot spread frames over an episode);
- ``this project``: the env client's request: those frames as one MP4 to ``/score``
  (probability mode: one forward, one completion token), its default size (upscaled to the
  model's video pixel floor, 336x336);
- ``this project, native``: the same with ``native_frame_size`` (252x252, the size vLLM's
  image processor gives the JPEG frames).

Per request: bytes sent, client CPU seconds (building and sending the bodies), prompt and
completion tokens the judge processed (the OpenAI server's ``usage``; the reward server's
``/metrics``), judge seconds (each burst's wall time over its requests). Per GRPO step at RLinf's
libero_10 settings (:mod:`benchmarks.grpo_projection`): requests and judge time. What it does not
measure: which way judges better (the weights are random), how much judging the rollout waits
for (benchmark 8 measures this project's overlap), a GPU engine's batching of 64 requests.

    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=. .venv/bin/python benchmarks/bench_rlinf_reward_shape.py \\
        [--episodes 4] [--steps 64] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from benchmarks import grpo_projection
from benchmarks import rlinf_api_request as peer
from benchmarks.harness import Row, Stats, header, interleave, parse_args, print_table
from benchmarks.reward_shape_requests import (
    CHUNK,
    Variants,
    buffer_bursts,
    equal_frames_bursts,
    project_body,
)
from benchmarks.two_view_episodes import Episode, render_libero, synthetic
from vlm_reward.protocol import DEFAULT_NFRAMES


@dataclass
class Tally:
    """What one way of asking cost over the measured repetitions."""

    requests: int = 0
    bytes_sent: int = 0
    cpu_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    request_s: list[float] = field(default_factory=list)  # each burst's wall / its requests

    def per_request(self, total: float) -> Stats:
        return Stats.of([total / self.requests])


def token_counts(server: Any) -> tuple[float, float]:
    """The reward server's ``/metrics`` prompt and generated tokens so far (all backends)."""
    from prometheus_client.parser import text_string_to_metric_families

    text = requests.get(server.url("/metrics"), timeout=10).text
    counted = {"vlm_reward_prompt_tokens_total": 0.0, "vlm_reward_generated_tokens_total": 0.0}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in counted:
                counted[sample.name] += sample.value
    return counted["vlm_reward_prompt_tokens_total"], counted["vlm_reward_generated_tokens_total"]


def post_score(endpoint: str, bodies: Sequence[dict[str, Any]]) -> None:
    """Every ``/score`` body at once; ``RuntimeError`` unless all are answered 200."""
    with ThreadPoolExecutor(len(bodies)) as pool:
        statuses = list(pool.map(lambda b: requests.post(endpoint, json=b, timeout=600).status_code, bodies))
    if any(status != 200 for status in statuses):
        raise RuntimeError(f"/score answered {statuses}; see the reward server's log.")


def run_bursts(
    build: Callable[[], list[list[dict[str, Any]]]], send: Callable[[list[dict[str, Any]]], Any], tally: Tally
) -> list[Any]:
    """Build the bodies, then send burst after burst, each waited for; tallies requests, bytes,
    client CPU and each burst's seconds per request. The sender's answers, burst by burst."""
    cpu = time.process_time()
    bursts = build()
    answers = []
    for bodies in bursts:
        started = time.perf_counter()
        answers.append(send(bodies))
        tally.request_s.append((time.perf_counter() - started) / len(bodies))
        tally.requests += len(bodies)
        tally.bytes_sent += sum(len(json.dumps(body)) for body in bodies)
    tally.cpu_s += time.process_time() - cpu
    return answers


def peer_run(url: str, build: Callable[[], list[list[dict[str, Any]]]], tally: Tally) -> float:
    """One repetition of an RLinf way of asking; tokens from the OpenAI server's ``usage``."""
    started = time.perf_counter()
    for answers in run_bursts(build, lambda bodies: peer.post_all(url, bodies), tally):
        tally.prompt_tokens += sum(a["usage"]["prompt_tokens"] for a in answers)
        tally.completion_tokens += sum(a["usage"]["completion_tokens"] for a in answers)
    return time.perf_counter() - started


def project_run(server: Any, episodes: list[Episode], native: bool, tally: Tally, tmp: Path) -> float:
    """One repetition of this project's call per episode end; tokens from ``/metrics``."""
    before = token_counts(server)
    started = time.perf_counter()
    run_bursts(
        lambda: [[project_body(e, tmp, native) for e in episodes]],
        lambda bodies: post_score(server.endpoint, bodies),
        tally,
    )
    elapsed = time.perf_counter() - started
    after = token_counts(server)
    tally.prompt_tokens += int(after[0] - before[0])
    tally.completion_tokens += int(after[1] - before[1])
    return elapsed


class OpenAIServer:
    """vLLM's own OpenAI server on the vLLM venv, serving ``model`` (images only, up to
    :data:`DEFAULT_NFRAMES` a prompt), with the same ``max_model_len`` as the reward server's."""

    def __init__(self, python: str, model: str, log_path: Path, max_model_len: int) -> None:
        import subprocess

        from vlm_reward.tools.runtime import server_env
        from vlm_reward.tools.server_process import free_port

        self.port, self.log_path = free_port(), log_path
        command = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", model]
        command += ["--host", "127.0.0.1", "--port", str(self.port), "--enforce-eager"]
        command += ["--max-model-len", str(max_model_len)]
        command += ["--limit-mm-per-prompt", json.dumps({"image": DEFAULT_NFRAMES, "video": 0})]
        with open(log_path, "ab") as log:
            env = {**os.environ, **server_env(python)}
            self.proc = subprocess.Popen(command, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"

    def wait_ready(self, timeout: float = 420.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the OpenAI server exited; see {self.log_path}")
            try:
                if requests.get(f"http://127.0.0.1:{self.port}/v1/models", timeout=2).status_code == 200:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the OpenAI server never got ready; see {self.log_path}")

    def stop(self) -> None:
        from vlm_reward.tools.server_process import stop_process

        stop_process(self.proc)


@dataclass(frozen=True)
class Way:
    """One way of asking: its row name, what it is, and its requests per episode of RLinf's
    libero_10 length (:class:`~benchmarks.grpo_projection.GrpoSettings`)."""

    name: str
    what: str
    per_episode: int


def ways() -> list[Way]:
    """The rows, in the order the tables print them."""
    chunks = grpo_projection.GrpoSettings().chunk_steps
    by_episode = peer.per_episode(chunks)
    fails = (
        ""
        if peer.runs_in_rlinf_main(by_episode, chunks)
        else "; does not run in RLinf main (`{}` between ticks)"
    )
    return [
        Way(
            "RLinf per chunk",
            f"{peer.PER_CHUNK.label}; main + wrist x 5 chunk ends, JPEG",
            peer.requests_per_episode(peer.PER_CHUNK, chunks),
        ),
        Way(
            "RLinf per episode",
            f"{by_episode.label}; main + wrist x 5 chunk ends, JPEG{fails}",
            peer.requests_per_episode(by_episode, chunks),
        ),
        Way("RLinf request, 16 main frames", f"main x {DEFAULT_NFRAMES} frames over the episode, JPEG", 1),
        Way("this project", f"main x {DEFAULT_NFRAMES} frames over the episode, MP4, 336 px", 1),
        Way(
            "this project, native",
            f"main x {DEFAULT_NFRAMES} frames over the episode, MP4, native_frame_size (252 px)",
            1,
        ),
    ]


NAMES = [way.name for way in ways()]


def measure(
    args: argparse.Namespace, make_episodes: Callable[[], list[Episode]], checkpoint: str, tmp: Path
) -> dict[str, Tally]:
    """Every way of asking, interleaved, against the two servers of one tiny checkpoint; the
    episodes are made while the servers start (rendering and start-up overlap)."""
    from vlm_reward.tools.runtime import vllm_venv
    from vlm_reward.tools.server_process import RewardServerProcess, backend_args

    python = str(vllm_venv() / "bin" / "python")
    max_model_len = 8192
    upstream = OpenAIServer(python, checkpoint, tmp / "openai.log", max_model_len)
    server_args = backend_args(
        "qwen_vl_vllm", checkpoint, tmp, {"enforce_eager": True, "max_model_len": max_model_len}
    )
    server = RewardServerProcess(server_args, tmp / "reward_server.log", python=python)
    tallies = {name: Tally() for name in NAMES}
    try:
        episodes = make_episodes()
        upstream.wait_ready()
        server.wait_ready(420.0)
        variants = Variants(episodes)
        chunks = len(episodes[0].views["main_images"]) // CHUNK
        builders: dict[str, Callable[[list[Episode]], list[list[dict[str, Any]]]]] = {
            "RLinf per chunk": lambda eps: buffer_bursts(checkpoint, eps, peer.PER_CHUNK),
            "RLinf per episode": lambda eps: buffer_bursts(checkpoint, eps, peer.per_episode(chunks)),
            "RLinf request, 16 main frames": lambda eps: equal_frames_bursts(checkpoint, eps),
        }

        def contenders(counted: dict[str, Tally]) -> dict[str, Callable[[], float]]:
            def peer_way(name: str) -> Callable[[], float]:
                return lambda: peer_run(
                    upstream.url, lambda: builders[name](variants.next_for(name)), counted[name]
                )

            def project_way(name: str, native: bool) -> Callable[[], float]:
                return lambda: project_run(server, variants.next_for(name), native, counted[name], tmp)

            return {
                **{name: peer_way(name) for name in builders},
                "this project": project_way("this project", False),
                "this project, native": project_way("this project, native", True),
            }

        interleave(
            contenders({name: Tally() for name in tallies}), repeats=1, warmup=0
        )  # warm-up, not counted
        interleave(contenders(tallies), args.repeats, warmup=0)
    finally:
        server.stop()
        upstream.stop()
    return tallies


def report(tallies: dict[str, Tally], args: argparse.Namespace) -> None:
    """Per request, then per episode and per GRPO step at RLinf's libero_10 settings."""
    rows = []
    for name, tally in tallies.items():
        rows += [
            Row(f"{name}: bytes sent", tally.per_request(tally.bytes_sent), "KB", 1e-3),
            Row(f"{name}: client CPU", tally.per_request(tally.cpu_s), "ms", 1e3),
            Row(f"{name}: prompt tokens", tally.per_request(tally.prompt_tokens), ""),
            Row(f"{name}: completion tokens", tally.per_request(tally.completion_tokens), ""),
            Row(f"{name}: judge seconds", Stats.of(tally.request_s), "s"),
        ]
    print_table(
        f"Per request ({args.episodes} episodes of {args.steps} steps at a time, {args.repeats} repetitions; "
        f"requests measured: { {name: t.requests for name, t in tallies.items()} })",
        rows,
    )
    settings = grpo_projection.GrpoSettings()
    print(f"\nPer {settings.max_steps}-step episode and per GRPO step ({settings.episodes:,} episodes):")
    ours = grpo_projection.project(1, Stats.of(tallies["this project"].request_s).median, settings)
    for way in ways():
        tally = tallies[way.name]
        cost = grpo_projection.project(way.per_episode, Stats.of(tally.request_s).median, settings)
        print(
            f"{way.name} ({way.what}): {way.per_episode} request(s) an episode, "
            f"{way.per_episode * tally.prompt_tokens / tally.requests:,.0f} prompt tokens an episode; "
            f"a step: {cost.requests:,} requests, judge {cost.judge_s:,.0f} s "
            f"({cost.judge_s / ours.judge_s:.2f}x this project's)"
        )


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--episodes", type=int, default=4, help="envs (episodes) per repetition")
    parser.add_argument("--steps", type=int, default=64, help="steps per episode (a multiple of 8, >= 40)")
    parser.add_argument("--size", type=int, default=256, help="camera side in pixels (LIBERO's: 256)")
    parser.add_argument("--synthetic", action="store_true", help="synthetic frames instead of LIBERO renders")


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=3, add=_add)
    least = CHUNK * peer.PER_CHUNK.min_history_size
    if args.steps % CHUNK or args.steps < least:
        raise SystemExit(f"--steps must be a multiple of {CHUNK} and at least {least}, got {args.steps}.")
    header("Benchmark 14: RLinf's API reward worker's requests and this project's (issues 39, 43)")
    from vlm_reward.tools.tiny_checkpoint import build_tiny_qwen2_5_vl

    with tempfile.TemporaryDirectory(prefix="bench-rlinf-shape-") as tmp:
        # First: importing torchvision after LIBERO's renderer has run segfaults here.
        checkpoint = str(build_tiny_qwen2_5_vl(Path(tmp) / "tiny"))
        make = synthetic if args.synthetic else render_libero
        tallies = measure(args, lambda: make(args.episodes, args.steps, args.size), checkpoint, Path(tmp))
    report(tallies, args)


if __name__ == "__main__":
    main()
