"""Benchmark 14b (issue 43): one request's cost by stage, this project's MP4 against JPEG data URLs.

Where a ``qwen_vl_vllm`` request's time goes at equal frames, against the JPEG images RLinf's API
reward worker sends, on one vLLM engine (the tiny random-weight Qwen2.5-VL, on this CPU, in this
process: no HTTP on either side). The same ``DEFAULT_NFRAMES`` frames of 256x256 (synthetic
scenes, a fresh set per request so no engine cache answers one from another), the same system
prompt and question (the ``yes_no`` preset's), one request at a time, in three stages (decode,
prepare, engine):

- ``MP4, 336 px``: this project's default request: the frames encoded as the client does, then
  the server's steps: probe and decode (PyAV), prepare (the resize to the model's video pixel
  floor, :func:`vlm_reward.backends.qwen_vision.video_input`, and the chat prompt), the engine
  (one completion token, probability mode);
- ``MP4, 252 px``: the same with ``native_frame_size`` (the frames' own size in whole tokens);
- ``JPEG x 16``: the frames as JPEG (quality 95) decoded by PIL as vLLM's OpenAI server does with
  data URLs (prepare: the chat prompt), sent as 16 images (252x252 after vLLM's image processor,
  inside the engine's time): the same pixels as the 252 px MP4; one completion token, and 16
  (RLinf's ``max_tokens``, EOS ignored);
- ``JPEG x 8``: half the frames: the visual tokens of 16 video frames, which the model's
  temporal patch takes in pairs (an image is one frame repeated).

The engine's time holds vLLM's input processing (the HF processor), the vision encoder, the
prefill and the decode. The resize is also timed on its own, as it is and as it was before
issue 43 (torchvision on the uint8 frames, then float), in the same repetitions, on the same clips.

    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=. .venv-vllm/bin/python benchmarks/bench_request_stages.py
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import Row, Stats, header, parse_args, print_table, ratios, synthetic_frames
from vlm_reward.protocol import DEFAULT_MAX_PIXELS, DEFAULT_NFRAMES, DEFAULT_VIDEO_FPS

TASK = "put the black bowl in the basket"
MP4_WAYS = {"MP4, 336 px": False, "MP4, 252 px": True}
JPEG_WAYS = {"JPEG x 16": (DEFAULT_NFRAMES, 1), "JPEG x 16, 16 tokens out": (DEFAULT_NFRAMES, 16)}
JPEG_WAYS["JPEG x 8"] = (DEFAULT_NFRAMES // 2, 1)
STAGES = ("decode", "prepare", "engine")


class Engine:
    """vLLM's async engine on the tiny checkpoint (up to 16 images or 1 video a prompt), its
    processor, the family and the probability-mode prompt and sampling of ``qwen_vl_vllm``."""

    def __init__(self, checkpoint: str) -> None:
        import vllm
        from transformers import AutoProcessor

        from vlm_reward.backends.answer_tokens import answer_tokens_or_error, probability_sampling
        from vlm_reward.backends.async_base import LoopThread
        from vlm_reward.backends.qwen_vl_vllm import QwenVllmBackend
        from vlm_reward.judging.prompts import ServerPrompts

        self.vllm = vllm
        self.family = QwenVllmBackend(checkpoint).resolve_family()
        self.processor = AutoProcessor.from_pretrained(checkpoint)
        self.spec = ServerPrompts("qwen", {}).for_job("probability", {})
        tokens = answer_tokens_or_error(self.processor.tokenizer)[self.spec.answer_scale.name]
        self.probability = probability_sampling(tokens)
        self.loop = LoopThread("bench-stages")
        limits = {"image": DEFAULT_NFRAMES, "video": 1}
        args = vllm.AsyncEngineArgs(model=checkpoint, enforce_eager=True, limit_mm_per_prompt=limits)
        self.engine = self.loop.run(self._start(args))

    async def _start(self, args: Any) -> Any:
        return self.vllm.AsyncLLMEngine.from_engine_args(args)

    def generate(self, request: dict[str, Any], sampling: dict[str, Any]) -> tuple[float, int, int]:
        """Seconds, prompt tokens and completion tokens of one request."""
        final = self.vllm.sampling_params.RequestOutputKind.FINAL_ONLY
        params = self.vllm.SamplingParams(**sampling, output_kind=final)

        async def run() -> Any:
            output = None
            async for latest in self.engine.generate(request, params, request_id=uuid.uuid4().hex):
                output = latest
            return output

        started = time.perf_counter()
        output = self.loop.run(run())
        return time.perf_counter() - started, len(output.prompt_token_ids), len(output.outputs[0].token_ids)

    def close(self) -> None:
        self.engine.shutdown()
        self.loop.stop()


def resize_before(clip: Any, size: tuple[int, int]) -> Any:
    """The resize as ``video_input`` did it before issue 43: torchvision on the uint8 frames."""
    import torch
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms import functional as tf

    video = torch.from_numpy(clip.frames).permute(0, 3, 1, 2)
    return tf.resize(video, list(size), interpolation=InterpolationMode.BICUBIC, antialias=True).float()


def lap(times: dict[str, float], stage: str, started: float) -> float:
    now = time.perf_counter()
    times[stage] = now - started
    return now


def mp4_request(engine: Engine, frames: np.ndarray, native: bool, tmp: Path) -> dict[str, float]:
    """This project's server steps for one MP4, each timed; the engine's tokens too."""
    from vlm_reward.backends.base import ScoreJob
    from vlm_reward.backends.qwen_vision import job_messages, qwen_frame_indices, video_input
    from vlm_reward.backends.qwen_vl_vllm import build_vllm_request
    from vlm_reward.video_io import decode_clip, encode_mp4, probe_video

    path = tmp / f"clip_{time.perf_counter_ns()}.mp4"
    encode_mp4(frames, path, fps=DEFAULT_VIDEO_FPS)
    times: dict[str, float] = {}
    started = time.perf_counter()
    probe = probe_video(path)
    clip = decode_clip(path, qwen_frame_indices(probe.num_frames, DEFAULT_NFRAMES), probe)
    started = lap(times, "decode", started)
    job = ScoreJob(
        TASK,
        str(path),
        DEFAULT_NFRAMES,
        DEFAULT_MAX_PIXELS,
        DEFAULT_VIDEO_FPS,
        clip=clip,
        native_frame_size=native,
    )
    request = build_vllm_request(engine.spec, job, engine.processor, engine.family, engine.spec.answer_prefix)
    started = lap(times, "prepare", started)  # the frames resized, the chat prompt
    entry = job_messages(engine.spec, job, clip)[1]["content"][0]
    video, _ = video_input(clip, entry, _vision_process(), engine.family, native)
    started = lap(times, "resize", started)  # the part of prepare that resizes, on its own
    resize_before(clip, tuple(video.shape[-2:]))
    lap(times, "resize before", started)
    times["engine"], times["prompt tokens"], times["completion tokens"] = engine.generate(
        request, engine.probability
    )
    path.unlink()
    return times


def _vision_process() -> Any:
    from vlm_reward.backends.qwen_vision import _import_qwen_vl_utils

    return _import_qwen_vl_utils()


def jpeg_request(engine: Engine, frames: np.ndarray, count: int, max_tokens: int) -> dict[str, float]:
    """``count`` frames as JPEG bytes decoded by PIL, the same messages with images for the video."""
    from PIL import Image

    from vlm_reward.judging.prompts import build_messages

    blobs = []
    for frame in frames[:: DEFAULT_NFRAMES // count][:count]:
        buffer = io.BytesIO()
        Image.fromarray(frame).save(buffer, format="JPEG", quality=95)
        blobs.append(buffer.getvalue())
    times: dict[str, float] = {}
    started = time.perf_counter()
    images = [Image.open(io.BytesIO(blob)).convert("RGB") for blob in blobs]
    started = lap(times, "decode", started)
    messages = build_messages(engine.spec, TASK, "", nframes=count, max_pixels=DEFAULT_MAX_PIXELS)
    messages[1]["content"][0:1] = [{"type": "image"} for _ in images]
    prompt = engine.processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    request = {"prompt": prompt + engine.spec.answer_prefix, "multi_modal_data": {"image": images}}
    lap(times, "prepare", started)
    sampling = {"max_tokens": max_tokens, "temperature": 0.0, "ignore_eos": True}
    times["engine"], times["prompt tokens"], times["completion tokens"] = engine.generate(request, sampling)
    return times


def measure(engine: Engine, repeats: int, tmp: Path) -> dict[str, list[dict[str, float]]]:
    """Every way, a fresh scene each, in rotating order; the first repetition is a warm-up."""
    ways: dict[str, Callable[[np.ndarray], dict[str, float]]] = {
        **{name: (lambda f, n=native: mp4_request(engine, f, n, tmp)) for name, native in MP4_WAYS.items()},
        **{name: (lambda f, w=way: jpeg_request(engine, f, *w)) for name, way in JPEG_WAYS.items()},
    }
    names, samples = list(ways), {name: [] for name in ways}
    for rep in range(repeats + 1):
        for k, name in enumerate(names[rep % len(names) :] + names[: rep % len(names)]):
            frames = synthetic_frames(DEFAULT_NFRAMES, 256, seed=1000 * rep + k)
            times = ways[name](frames)
            if rep:
                samples[name].append(times)
    return samples


def report(samples: dict[str, list[dict[str, float]]], repeats: int) -> None:
    """Stage medians per way, then the resize before and after."""
    rows = []
    for name, runs in samples.items():
        for stage in STAGES:
            rows.append(Row(f"{name}: {stage}", Stats.of([r[stage] for r in runs]), "ms", 1e3))
        rows.append(Row(f"{name}: total", Stats.of([_total(r) for r in runs]), "ms", 1e3))
        rows.append(Row(f"{name}: prompt tokens", Stats.of([r["prompt tokens"] for r in runs]), ""))
        rows.append(Row(f"{name}: completion tokens", Stats.of([r["completion tokens"] for r in runs]), ""))
    print_table(f"One request by stage, one at a time ({repeats} repetitions)", rows)
    rows = []
    for name in MP4_WAYS:
        runs = samples[name]
        before, after = [r["resize before"] for r in runs], [r["resize"] for r in runs]
        rows += [
            Row(f"{name}: resize before (uint8)", Stats.of(before), "ms", 1e3),
            Row(f"{name}: resize after (float32)", Stats.of(after), "ms", 1e3),
            Row(f"{name}: before / after", Stats.of(ratios(before, after)), "x"),
        ]
    print_table("The resize before and after issue 43 (same clips, same repetitions)", rows)


def _total(times: dict[str, float]) -> float:
    return sum(times[stage] for stage in STAGES)


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=7)
    header("Benchmark 14b: one request by stage, this project's MP4 against JPEG data URLs (issue 43)")
    from vlm_reward.tools.runtime import server_env
    from vlm_reward.tools.tiny_checkpoint import build_tiny_qwen2_5_vl

    for name, value in server_env(sys.executable).items():
        os.environ.setdefault(name, value)  # the CPU engine's KV cache size, unless set
    with tempfile.TemporaryDirectory(prefix="bench-stages-") as tmp:
        engine = Engine(str(build_tiny_qwen2_5_vl(Path(tmp) / "tiny")))
        try:
            samples = measure(engine, args.repeats, Path(tmp))
        finally:
            engine.close()
    report(samples, args.repeats)


if __name__ == "__main__":
    main()
