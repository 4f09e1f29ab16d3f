"""One ``/score`` of ``qwen_vl_hf`` broken into its stages, each timed on its own, for a batch of videos.

The stages are the server's and the backend's own functions, called in their order, one batch of
distinct videos at a time (probability mode, the env's default request):

- ``probe``: the container's frame count and rate (:func:`vlm_reward.video_io.probe_video`);
- ``frame sampling``: which frames the model sees
  (:func:`~vlm_reward.backends.qwen_vision.qwen_frame_indices`);
- ``decode``: every frame decoded once, the sampled ones kept (:func:`~vlm_reward.video_io.decode_clip`);
- ``resize and prompt``: the messages, the chat template, the frames resized for the family
  (:func:`~vlm_reward.backends.qwen_vision.load_vision_inputs`);
- ``processor``: the HF processor per job, joined into the batch and copied to the device;
- ``vision encoder``: ``model.visual`` on the batch's patches;
- ``whole forward``: the model's forward pass (vision encoder, then language-model prefill);
- ``LM prefill and readout``: the forward less the vision encoder, plus reading P(yes).

The CPU stages are timed one job after another (the sum a single thread pays); ``CPU stages on
the pool`` is the same work on the backend's preparing threads (:mod:`vlm_reward.backends.prefetch`)
as the server does it. Device stages are synchronised (``torch.cuda.synchronize``) before each
clock read. :func:`model_flops` counts the forward's floating-point operations once (torch's
``FlopCounterMode``, outside the timing), so a caller can state the share of a chip's peak.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from vlm_reward.backends.answer_tokens import probability_answer
from vlm_reward.backends.base import ScoreJob
from vlm_reward.backends.input_batch import join_inputs
from vlm_reward.backends.qwen_vision import job_messages, load_vision_inputs, qwen_frame_indices
from vlm_reward.backends.qwen_vl_hf import processor_inputs, render_prompt
from vlm_reward.judging.model_family import ModelFamily
from vlm_reward.judging.probability import AnswerTokens
from vlm_reward.judging.prompts import PromptSpec
from vlm_reward.video_io import Clip, VideoProbe, decode_clip, probe_video

CPU_STAGES = ("probe", "frame sampling", "decode", "resize and prompt", "processor")
DEVICE_STAGES = ("vision encoder", "whole forward", "LM prefill and readout")
POOL = "CPU stages on the pool"


@dataclass
class Judge:
    """What the stages run: a loaded model and its processor, the family, the prompt and its tokens."""

    model: Any
    processor: Any
    family: ModelFamily
    spec: PromptSpec
    tokens: AnswerTokens
    copies: list[Any] = field(default_factory=list)  # the preparing threads' processors, kept warm

    @property
    def device(self) -> Any:
        return self.model.device

    def processors(self, count: int) -> list[Any]:
        """``count`` copies of the processor, made once and reused (as the backend's threads keep theirs)."""
        while len(self.copies) < count:
            self.copies.append(copy.deepcopy(self.processor))
        return self.copies[:count]


def _clock(sync: Callable[[], None]) -> float:
    sync()
    return time.perf_counter()


def device_sync(device: Any) -> Callable[[], None]:
    """A function that waits for ``device``'s queued work (nothing to wait for on the CPU)."""
    import torch

    if getattr(device, "type", str(device)).startswith("cuda"):
        return torch.cuda.synchronize
    return lambda: None


def prepare_one(judge: Judge, job: ScoreJob, processor: Any, times: dict[str, float] | None = None) -> Any:
    """One job's CPU stages, timed into ``times`` (added to what is there); its processor output."""
    times = {} if times is None else times
    marks = [time.perf_counter()]

    def lap(stage: str) -> None:
        marks.append(time.perf_counter())
        times[stage] = times.get(stage, 0.0) + marks[-1] - marks[-2]

    probe: VideoProbe = probe_video(job.video_path)
    lap("probe")
    indices = qwen_frame_indices(probe.num_frames, job.nframes)
    lap("frame sampling")
    clip: Clip = decode_clip(job.video_path, indices, probe)
    lap("decode")
    messages = job_messages(judge.spec, job, clip)
    text = render_prompt(processor, messages) + judge.spec.answer_prefix
    vision = load_vision_inputs(messages, clip, judge.family, job.native_frame_size)
    lap("resize and prompt")
    inputs = processor_inputs(processor, [text], [vision])
    lap("processor")
    return inputs


def batch_inputs(judge: Judge, parts: Sequence[Any]) -> Any:
    """The jobs' processor outputs as the model's batch on its device, pixels in its dtype."""
    tokenizer = judge.processor.tokenizer
    inputs = join_inputs(parts, tokenizer.pad_token_id, tokenizer.padding_side).to(judge.device)
    for key in ("pixel_values", "pixel_values_videos"):
        if key in inputs:
            inputs[key] = inputs[key].to(judge.model.dtype)
    return inputs


def _visual(judge: Judge, inputs: Any) -> Any:
    return judge.model.model.visual(inputs["pixel_values_videos"], grid_thw=inputs["video_grid_thw"])


def _readout(judge: Judge, logits: Any) -> list[float]:
    import torch

    rows = torch.log_softmax(logits.float(), dim=-1)
    ids = judge.tokens.ids
    return [
        probability_answer(dict(zip(ids, row[ids].tolist(), strict=True)), judge.tokens).probability
        for row in rows
    ]


def time_batch(
    judge: Judge, jobs: Sequence[ScoreJob], workers: int = 1
) -> tuple[dict[str, float], list[float]]:
    """Every stage's seconds for ``jobs`` as one batch, and each job's P(yes) (the readout).

    ``workers`` > 1 also times the CPU stages on a pool of that many threads (:data:`POOL`), each
    thread with its own copy of the processor, as the backend prepares queued jobs.
    """
    import torch

    sync = device_sync(judge.device)
    times: dict[str, float] = {}
    parts = [prepare_one(judge, job, judge.processor, times) for job in jobs]
    if workers > 1:
        processors = judge.processors(workers)
        started = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda i: prepare_one(judge, jobs[i], processors[i % workers]), range(len(jobs))))
        times[POOL] = time.perf_counter() - started
    started = _clock(sync)
    inputs = batch_inputs(judge, parts)
    times["processor"] += _clock(sync) - started
    with torch.inference_mode():
        started = _clock(sync)
        _visual(judge, inputs)
        times["vision encoder"] = _clock(sync) - started
        started = _clock(sync)
        logits = judge.model(**inputs).logits[:, -1, :]
        times["whole forward"] = _clock(sync) - started
        started = _clock(sync)
        scores = _readout(judge, logits)
        readout = _clock(sync) - started
    times["LM prefill and readout"] = times["whole forward"] - times["vision encoder"] + readout
    return times, scores


def model_flops(judge: Judge, jobs: Sequence[ScoreJob]) -> dict[str, float]:
    """Floating-point operations of the vision encoder and of the whole forward for ``jobs``' batch."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    inputs = batch_inputs(judge, [prepare_one(judge, job, judge.processor) for job in jobs])
    counted = {}
    configs = [judge.model.config, judge.model.config.vision_config, judge.model.config.text_config]
    shipped = [config._attn_implementation for config in configs]
    # torch 2.11's counter rejects grouped-query sdpa (fewer key than query heads); eager attention
    # does the same arithmetic as explicit matrix products, which it counts.
    for config in configs:
        config._attn_implementation = "eager"
    try:
        with torch.inference_mode():
            for name, run in (
                ("vision encoder", lambda: _visual(judge, inputs)),
                ("whole forward", lambda: judge.model(**inputs)),
            ):
                counter = FlopCounterMode(display=False)
                with counter:
                    run()
                counted[name] = float(counter.get_total_flops())
    finally:  # the judge is timed again afterwards: give it back its own attention
        for config, implementation in zip(configs, shipped, strict=True):
            config._attn_implementation = implementation
    counted["LM prefill and readout"] = counted["whole forward"] - counted["vision encoder"]
    return counted


def prompt_tokens(judge: Judge, job: ScoreJob) -> int:
    """The prompt length of ``job`` (text and vision tokens)."""
    return int(prepare_one(judge, job, judge.processor)["input_ids"].shape[1])
