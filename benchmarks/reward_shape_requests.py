"""The requests of benchmark 14 (:mod:`benchmarks.bench_rlinf_reward_shape`), built: what each way
of asking sends for an episode, RLinf's worker (its history buffer's ticks, its request format) and
this project's env client (one inline MP4 of the sampled main frames); and the per-run pixel
variants that keep one run's requests out of another's engine caches."""

from __future__ import annotations

import base64
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import grpo_projection
from benchmarks import rlinf_api_request as peer
from benchmarks.two_view_episodes import Episode
from vlm_reward.protocol import DEFAULT_NFRAMES, DEFAULT_VIDEO_FPS

PEER_PROMPT = (
    "The images show a robot's latest frames from {views}. Task: {task}. Is the robot making "
    "progress on the task? Answer with one word: positive, negative or unclear."
)
VIEW_WORDS = {1: "its main camera", 2: "two cameras, the main view first, then the wrist view"}
CHUNK = grpo_projection.GrpoSettings().chunk
MAIN_ONLY = peer.RequestShape(views=("main_images",))


def variant(episodes: list[Episode], index: int) -> list[Episode]:
    """The episodes with every pixel raised by ``index + 1`` (clipped): each repetition's requests
    differ from every other's, so no cache of the engine (prefix, multimodal) answers one from a
    repetition before (:class:`Variants`)."""

    def raised(frames: list[np.ndarray]) -> list[np.ndarray]:
        return [np.clip(f.astype(np.int16) + index + 1, 0, 255).astype(np.uint8) for f in frames]

    return [Episode(e.task, {view: raised(frames) for view, frames in e.views.items()}) for e in episodes]


class Variants:
    """Every run of every way of asking gets its own variant of the episodes: no two runs send
    the same pixels, so no engine cache (vLLM's multimodal processor cache is keyed by an
    image's content) answers one way's request from another's. Within one run RLinf's per-chunk
    requests still share 8 of 10 frames with the chunk before, as they do in RLinf."""

    def __init__(self, episodes: list[Episode]) -> None:
        self.episodes = episodes
        self.made = 0

    def next_for(self, contender: str) -> list[Episode]:
        self.made += 1
        return variant(self.episodes, self.made - 1)


def main_frame_indices(steps: int) -> list[int]:
    """The main-view frames this project's client sends for an episode of ``steps`` frames."""
    from vlm_reward.client.scoring import sample_frame_indices

    return [int(i) for i in sample_frame_indices(steps, DEFAULT_NFRAMES)]


def peer_body(
    model: str, episode: Episode, frames: Sequence[int], shape: peer.RequestShape
) -> dict[str, Any]:
    """RLinf's request for ``episode``'s frames at ``frames`` (step indices) of ``shape``'s views."""
    views = {view: [episode.views[view][i] for i in frames] for view in shape.views}
    prompt = PEER_PROMPT.format(views=VIEW_WORDS[len(shape.views)], task=episode.task)
    return peer.payload(model, prompt, views, shape)


def buffer_bursts(
    model: str, episodes: list[Episode], buffer: peer.HistoryBuffer
) -> list[list[dict[str, Any]]]:
    """Each chunk step's requests (every env in step) under RLinf's history ``buffer``; chunk end
    ``c`` is the newest frame of chunk ``c`` (step ``c * CHUNK - 1``)."""
    chunk_steps = len(episodes[0].views["main_images"]) // CHUNK
    shape = peer.RequestShape()
    return [
        [peer_body(model, e, [c * CHUNK - 1 for c in tick.window], shape) for e in episodes]
        for tick in peer.schedule(buffer, chunk_steps)
        if tick.window
    ]


def equal_frames_bursts(model: str, episodes: list[Episode]) -> list[list[dict[str, Any]]]:
    """One burst: RLinf's request carrying this project's frames (the main view's, over the episode)."""
    frames = main_frame_indices(len(episodes[0].views["main_images"]))
    return [[peer_body(model, e, frames, MAIN_ONLY) for e in episodes]]


def project_body(episode: Episode, tmp: Path, native: bool) -> dict[str, Any]:
    """The env client's request for one episode: its sampled main frames as one inline MP4."""
    from vlm_reward.protocol import ScoreRequest
    from vlm_reward.video_io import encode_mp4

    frames = episode.views["main_images"]
    path = tmp / f"episode_{time.perf_counter_ns()}.mp4"
    encode_mp4(np.stack([frames[i] for i in main_frame_indices(len(frames))]), path, fps=DEFAULT_VIDEO_FPS)
    video = base64.b64encode(path.read_bytes()).decode("ascii")
    path.unlink()
    request = ScoreRequest(task_text=episode.task, video_b64=video, native_frame_size=native)
    return request.model_dump(exclude_none=True)
