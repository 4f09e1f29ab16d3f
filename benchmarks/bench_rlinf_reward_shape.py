"""Benchmark 14 (issue 39): RLinf's API reward request shape against this project's, side by side.

The same episodes (LIBERO libero_10 renders of both cameras at 256x256, or ``--synthetic`` frames),
the same engine (vLLM on the tiny random-weight Qwen2.5-VL, on this CPU) served twice: as this
project's ``/score`` (``qwen_vl_vllm``) and as vLLM's own OpenAI server. Per repetition, the
contenders interleaved (:func:`benchmarks.harness.interleave`):

- ``RLinf shape`` (:mod:`benchmarks.rlinf_api_request`): at every chunk step of 8 actions, one chat
  request per env with the latest 5 frames of each of 2 views as JPEG data URLs, all envs' requests
  sent at once and waited for;
- ``this project``: at each episode's end, 16 frames sampled and encoded as one MP4 by the env
  client's own functions, sent inline to ``/score`` (probability mode), all envs' at once.

Per episode: requests, bytes sent, client CPU seconds (building and sending the bodies), prompt
tokens the judge processed (the OpenAI server's ``usage``; the reward server's ``/metrics``). Per
GRPO step at RLinf's libero_10 settings (:mod:`benchmarks.grpo_projection`): requests, judge time
and exposed reward time, from each shape's median judge seconds per request on the sample (its size
is printed). What it does not measure: which shape judges better (the weights are random), and a
GPU engine's batching of 64 concurrent requests.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_rlinf_reward_shape.py [--episodes 4] [--steps 64]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import requests

from benchmarks import grpo_projection, rlinf_api_request
from benchmarks.harness import Row, Stats, header, interleave, parse_args, print_table
from benchmarks.two_view_episodes import Episode, render_libero, synthetic

PEER_PROMPT = (
    "The images show a robot's recent frames from two cameras, the main view first, then the wrist "
    "view. Task: {task}. Is the robot making progress on the task? Answer with one word: positive, "
    "negative or unclear."
)
CHUNK = grpo_projection.GrpoSettings().chunk
NFRAMES, FPS = 16, 4.0


def variant(episodes: list[Episode], index: int) -> list[Episode]:
    """The episodes with every pixel raised by ``index + 1`` (clipped): each repetition's requests
    differ from every other's, so no cache of the engine (prefix, multimodal) answers one from a
    repetition before; both shapes of a repetition get the same variant."""

    def raised(frames: list[np.ndarray]) -> list[np.ndarray]:
        return [np.clip(f.astype(np.int16) + index + 1, 0, 255).astype(np.uint8) for f in frames]

    return [Episode(e.task, {view: raised(frames) for view, frames in e.views.items()}) for e in episodes]


class Variants:
    """Each contender's ``n``-th run gets the ``n``-th variant of the episodes (made once, shared)."""

    def __init__(self, episodes: list[Episode]) -> None:
        self.episodes = episodes
        self.made: dict[int, list[Episode]] = {}
        self.calls: dict[str, int] = {}

    def next_for(self, contender: str) -> list[Episode]:
        index = self.calls.get(contender, 0)
        self.calls[contender] = index + 1
        if index not in self.made:
            self.made = {index: variant(self.episodes, index)}  # the earlier variants are done with
        return self.made[index]


@dataclass
class Tally:
    """What one shape cost over a repetition: per request and per episode."""

    requests: int = 0
    bytes_sent: int = 0
    cpu_s: float = 0.0
    prompt_tokens: int = 0
    request_s: list[float] = field(default_factory=list)  # each burst's wall / its requests


def peer_repetition(url: str, model: str, episodes: list[Episode], tally: Tally) -> float:
    """Every chunk step of every episode in RLinf's shape; returns the repetition's wall seconds."""
    shape = rlinf_api_request.PeerShape()
    steps = len(episodes[0].views["main_images"])
    started = time.perf_counter()
    for end in range(CHUNK, steps + 1, CHUNK):
        cpu = time.process_time()
        bodies = [
            rlinf_api_request.payload(
                model, PEER_PROMPT.format(task=e.task), {v: f[:end] for v, f in e.views.items()}, shape
            )
            for e in episodes
        ]
        sizes = [len(json.dumps(body)) for body in bodies]
        burst = time.perf_counter()
        answers = rlinf_api_request.post_all(url, bodies, shape)
        tally.request_s.append((time.perf_counter() - burst) / len(bodies))
        tally.cpu_s += time.process_time() - cpu
        if any(answer is None for answer in answers):
            raise RuntimeError("an OpenAI request failed; see the upstream's log.")
        tally.requests += len(bodies)
        tally.bytes_sent += sum(sizes)
        tally.prompt_tokens += sum(answer["usage"]["prompt_tokens"] for answer in answers)
    return time.perf_counter() - started


def project_body(episode: Episode, tmp: Path) -> dict[str, Any]:
    """The env client's request for one episode: its sampled frames as one inline MP4."""
    from vlm_reward.client.scoring import sample_frame_indices
    from vlm_reward.protocol import ScoreRequest
    from vlm_reward.video_io import encode_mp4

    frames = episode.views["main_images"]
    path = tmp / f"episode_{time.perf_counter_ns()}.mp4"
    encode_mp4(np.stack([frames[i] for i in sample_frame_indices(len(frames), NFRAMES)]), path, fps=FPS)
    video = base64.b64encode(path.read_bytes()).decode("ascii")
    path.unlink()
    request = ScoreRequest(task_text=episode.task, video_b64=video, nframes=NFRAMES, video_fps=FPS)
    return request.model_dump(exclude_none=True)


def project_repetition(server: Any, episodes: list[Episode], tally: Tally, tmp: Path) -> float:
    """Every episode's end in this project's shape; returns the repetition's wall seconds."""
    tokens_before = prompt_tokens_counted(server)
    started = time.perf_counter()
    cpu = time.process_time()
    bodies = [project_body(e, tmp) for e in episodes]
    burst = time.perf_counter()
    with ThreadPoolExecutor(len(bodies)) as pool:
        statuses = list(
            pool.map(lambda b: requests.post(server.endpoint, json=b, timeout=600).status_code, bodies)
        )
    tally.request_s.append((time.perf_counter() - burst) / len(bodies))
    tally.cpu_s += time.process_time() - cpu
    if any(status != 200 for status in statuses):
        raise RuntimeError(f"/score answered {statuses}; see the reward server's log.")
    tally.requests += len(bodies)
    tally.bytes_sent += sum(len(json.dumps(body)) for body in bodies)
    tally.prompt_tokens += int(prompt_tokens_counted(server) - tokens_before)
    return time.perf_counter() - started


def prompt_tokens_counted(server: Any) -> float:
    """The reward server's ``/metrics`` count of prompt tokens so far (all backends)."""
    from prometheus_client.parser import text_string_to_metric_families

    text = requests.get(server.url("/metrics"), timeout=10).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "vlm_reward_prompt_tokens_total"
    )


class OpenAIServer:
    """vLLM's own OpenAI server on the vLLM venv, serving ``model`` (images only, up to 10 a prompt)."""

    def __init__(self, python: str, model: str, log_path: Path) -> None:
        import subprocess

        from vlm_reward.tools.runtime import server_env
        from vlm_reward.tools.server_process import free_port

        self.port, self.log_path = free_port(), log_path
        command = [
            python,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            model,
            "--host",
            "127.0.0.1",
        ]
        command += ["--port", str(self.port), "--enforce-eager", "--max-model-len", "8192"]
        command += ["--limit-mm-per-prompt", json.dumps({"image": 10, "video": 0})]
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


def measure(
    args: argparse.Namespace, episodes: list[Episode], checkpoint: str, tmp: Path
) -> dict[str, Tally]:
    """Both shapes, interleaved, against the two servers of one tiny checkpoint."""
    from vlm_reward.tools.runtime import vllm_venv
    from vlm_reward.tools.server_process import RewardServerProcess, backend_args

    python = str(vllm_venv() / "bin" / "python")
    upstream = OpenAIServer(python, checkpoint, tmp / "openai.log")
    server_args = backend_args("qwen_vl_vllm", checkpoint, tmp, {"enforce_eager": True})
    server = RewardServerProcess(server_args, tmp / "reward_server.log", python=python)
    tallies = {"RLinf shape": Tally(), "this project": Tally()}
    try:
        upstream.wait_ready()
        server.wait_ready(420.0)

        variants = Variants(episodes)

        def contenders(counted: dict[str, Tally]) -> dict[str, Callable[[], float]]:
            return {
                "RLinf shape": lambda: peer_repetition(
                    upstream.url, checkpoint, variants.next_for("RLinf shape"), counted["RLinf shape"]
                ),
                "this project": lambda: project_repetition(
                    server, variants.next_for("this project"), counted["this project"], tmp
                ),
            }

        # A warm-up repetition, not counted.
        interleave(contenders({name: Tally() for name in tallies}), repeats=1, warmup=0)
        interleave(contenders(tallies), args.repeats, warmup=0)
    finally:
        server.stop()
        upstream.stop()
    return tallies


def report(tallies: dict[str, Tally], episodes: int, steps: int, args: argparse.Namespace) -> None:
    """Per episode (the peer's also at 512 steps), per request, and per GRPO step."""
    settings = grpo_projection.GrpoSettings()
    runs = episodes * args.repeats
    scale = settings.max_steps / steps  # the peer's per-episode costs grow with the chunk steps
    rows = []
    for name, tally in tallies.items():
        grow = scale if name == "RLinf shape" else 1.0
        for label, total, unit in (
            ("requests", tally.requests, ""),
            ("bytes sent", tally.bytes_sent / 1e6, "MB"),
            ("client CPU", tally.cpu_s, "s"),
            ("prompt tokens", tally.prompt_tokens / 1e3, "k"),
        ):
            rows.append(Row(f"{name}: {label} per 512-step episode", Stats.of([total / runs * grow]), unit))
        rows.append(Row(f"{name}: judge seconds per request", Stats.of(tally.request_s), "s"))
    print_table(f"Per episode ({episodes} episodes of {steps} steps, {args.repeats} repetitions)", rows)
    samples = {name: tally.requests for name, tally in tallies.items()}
    print(f"\nsample: {samples} requests measured; projected to a GRPO step with chunks of {args.chunk_s} s")
    costs = {}
    for name, shape in (
        ("RLinf shape", grpo_projection.PER_CHUNK),
        ("this project", grpo_projection.PER_EPISODE),
    ):
        costs[name] = grpo_projection.project(
            shape, Stats.of(tallies[name].request_s).median, args.chunk_s, settings
        )
        cost = costs[name]
        print(
            f"{name}: {cost.requests:,} requests, judge {cost.judge_s:,.0f} s, "
            f"exposed {cost.exposed_s:,.0f} s ({cost.exposed_share:.1%} of a {cost.rollout_s:,.0f} s rollout)"
        )
    peer, ours = costs["RLinf shape"], costs["this project"]
    print(
        f"ratios RLinf / this project: requests {peer.requests / ours.requests:.0f}x, judge time "
        f"{peer.judge_s / ours.judge_s:.1f}x, exposed time {peer.exposed_s / ours.exposed_s:.1f}x"
    )


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--episodes", type=int, default=4, help="envs (episodes) per repetition")
    parser.add_argument("--steps", type=int, default=64, help="steps per episode (a multiple of 8)")
    parser.add_argument("--size", type=int, default=256, help="camera side in pixels (LIBERO's: 256)")
    parser.add_argument("--chunk-s", type=float, default=1.6, help="env seconds per 8-step chunk")
    parser.add_argument("--synthetic", action="store_true", help="synthetic frames instead of LIBERO renders")


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=2, add=_add)
    if args.steps % CHUNK or args.steps < CHUNK:
        raise SystemExit(f"--steps must be a positive multiple of {CHUNK}, got {args.steps}.")
    header("Benchmark 14: RLinf's API reward request shape vs this project's (issue 39)")
    from vlm_reward.tools.tiny_checkpoint import build_tiny_qwen2_5_vl

    with tempfile.TemporaryDirectory(prefix="bench-rlinf-shape-") as tmp:
        # First: importing torchvision after LIBERO's renderer has run segfaults here.
        checkpoint = str(build_tiny_qwen2_5_vl(Path(tmp) / "tiny"))
        make = synthetic if args.synthetic else render_libero
        tallies = measure(args, make(args.episodes, args.steps, args.size), checkpoint, Path(tmp))
    report(tallies, args.episodes, args.steps, args)


if __name__ == "__main__":
    main()
