"""One example as the model sees it when served: the server's own steps, imported, never re-coded.

The reward server turns a ``POST /score`` into a :class:`~vlm_reward.backends.base.ScoreJob`
(task text, video path, ``nframes``, ``max_pixels``, ``video_fps``, the request's
``backend_kwargs``) and the ``qwen_vl_hf`` backend turns the job into model inputs in four
public steps, which this module calls in the same order with the same arguments:

1. the prompt: :class:`~vlm_reward.judging.prompts.ServerPrompts` for score mode
   "probability" (the ``yes_no`` preset, or the preset the request's ``prompt`` names, e.g.
   ``roboreward``) with the server's and the request's overrides applied;
2. the frames: :func:`~vlm_reward.backends.qwen_vision.job_clip` decodes the MP4 once and keeps
   the frames qwen-vl-utils would pick (``qwen_frame_indices``), as the server's decoder does;
3. the messages and the text: :func:`~vlm_reward.backends.qwen_vision.job_messages` and
   :func:`~vlm_reward.backends.qwen_vl_hf.render_prompt` (the chat template) plus the preset's
   answer prefix, after which the answer token is read;
4. the pixels and the tensors: :func:`~vlm_reward.backends.qwen_vision.load_vision_inputs` (resized
   for the checkpoint's family) and :func:`~vlm_reward.backends.qwen_vl_hf.processor_inputs`.

So the training prompt's token ids and pixels are the server's for the same request (a test
compares them with the backend's own), and P(yes) read from the trained model in training is
what the server will answer. The processed tensors of an example never change between epochs,
so :class:`InputCache` keeps them after the first use (decoding and resizing a video costs a
large share of a small model's step; ``benchmarks/bench_finetune.py`` measures it).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vlm_reward.backends.base import ScoreJob
from vlm_reward.backends.qwen_vision import job_clip, job_messages, load_vision_inputs
from vlm_reward.backends.qwen_vl_hf import QwenHFBackend, processor_inputs, render_prompt
from vlm_reward.judging.model_family import ModelFamily
from vlm_reward.judging.prompts import PromptSpec, ServerPrompts

PROBABILITY = "probability"


@dataclass(frozen=True)
class Request:
    """What the evaluation's client sends with every video (the env YAML's ``reward_model`` block):
    frames at most, pixels per frame, frame rate, the per-request ``backend_kwargs``, whether
    frames keep their own size; and the server's own ``--backend-kwargs`` (its prompt overrides)."""

    nframes: int
    max_pixels: int
    video_fps: float
    backend_kwargs: Mapping[str, Any] = field(default_factory=dict)
    server_kwargs: Mapping[str, Any] = field(default_factory=dict)
    native_frame_size: bool = False

    def asked(self) -> dict[str, Any]:
        """What every training example is asked, as ``finetune.json`` records it (the judge-facing
        ``reward_model`` keys; the score mode is always probability, the readout that is trained)."""
        return {
            "nframes": self.nframes,
            "max_pixels": self.max_pixels,
            "video_fps": self.video_fps,
            "native_frame_size": self.native_frame_size,
            "score_mode": PROBABILITY,
            "backend_kwargs": dict(self.backend_kwargs),
        }

    def job(self, task_text: str, video: str, frames: int) -> ScoreJob:
        """The server's job for one video of ``frames`` frames (``nframes`` as the evaluation
        sends it: at most the video's frames)."""
        return ScoreJob(
            task_text=task_text,
            video_path=video,
            nframes=min(frames, self.nframes),
            max_pixels=self.max_pixels,
            video_fps=self.video_fps,
            backend_kwargs=dict(self.backend_kwargs),
            score_mode=PROBABILITY,
            native_frame_size=self.native_frame_size,
        )

    def prompt(self) -> PromptSpec:
        """The prompt the server asks in probability mode (its answer scale is what is trained)."""
        prompts = ServerPrompts(QwenHFBackend.default_preset, dict(self.server_kwargs))
        return prompts.for_job(PROBABILITY, dict(self.backend_kwargs))


def model_inputs(processor: Any, family: ModelFamily, spec: PromptSpec, job: ScoreJob) -> Any:
    """The processor's tensors for ``job`` (batch of one), as the ``qwen_vl_hf`` backend builds them
    in probability mode: prompt text ending with the preset's answer prefix, then the vision inputs."""
    clip = job_clip(job)
    messages = job_messages(spec, job, clip)
    text = render_prompt(processor, messages) + spec.answer_prefix
    vision = load_vision_inputs(messages, clip, family, job.native_frame_size)
    return processor_inputs(processor, [text], [vision])


class InputCache:
    """Each example's processed tensors, built once (:func:`model_inputs`) and reused every epoch.

    ``seconds`` is the time spent building them (decode, resize, processor): what the cache saves
    on every later epoch. ``enabled=False`` builds them on every use (for the benchmark).
    """

    def __init__(self, processor: Any, family: ModelFamily, spec: PromptSpec, enabled: bool = True) -> None:
        self.processor, self.family, self.spec, self.enabled = processor, family, spec, enabled
        self._store: dict[str, Any] = {}
        self.seconds = 0.0

    def get(self, key: str, job: ScoreJob) -> Any:
        """The inputs of the example ``key`` (its job built by the caller)."""
        if key in self._store:
            return self._store[key]
        started = time.perf_counter()
        inputs = model_inputs(self.processor, self.family, self.spec, job)
        self.seconds += time.perf_counter() - started
        if self.enabled:
            self._store[key] = inputs
        return inputs
