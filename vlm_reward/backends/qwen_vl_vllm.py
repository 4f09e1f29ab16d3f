"""Qwen-VL models (Qwen2.5-VL, Qwen3-VL) through vLLM's async engine: the server's default backend.

The model sees one episode as a video and is asked whether the task was done: by default
the score is P(yes) (score_mode "probability"), or, in a text mode, the number it writes
in ``<answer>`` (the "qwen" prompt preset). Everything that decides *what* vLLM receives
lives in plain functions (:func:`build_vllm_request` here; engine and sampling settings in
:mod:`vlm_reward.backends.vllm_settings`) so it is tested on machines without vLLM; only
:meth:`QwenVllmBackend.load_async` imports vLLM.

How requests reach the engine: each job is its own ``AsyncLLM.generate`` call, made the
moment the server has validated its video (:class:`~vlm_reward.backends.async_base.AsyncRewardBackend`).
vLLM's continuous batching adds it to the running batch at the next step, so a short
request never waits for a long answer to finish, and a cancelled job (its client left,
the server is stopping) is aborted in the engine, freeing its slot and KV cache.

Targeted versions: vLLM 0.11 through 0.33 (both read at the source level), with
qwen-vl-utils >= 0.0.14. vLLM 0.11.0 requires transformers >= 4.55.2 and so runs with this
project's transformers 4.57; vLLM 0.33.0 requires transformers >= 5.16.1 (and torch 2.14.0),
so a recent vLLM needs an environment of its own for the reward server.

Facts this module relies on (checked in the vLLM 0.11.0 and 0.33.0 wheels, transformers
4.57.6 and 5.16.1, qwen-vl-utils 0.0.14; the qwen-vl-utils ones are listed in
:mod:`vlm_reward.backends.qwen_vision`, which reads the frames for both Qwen backends):

- vLLM >= 0.11 accepts a video as a ``(frames, metadata)`` tuple, where metadata is the
  dict qwen-vl-utils returns with ``return_video_metadata=True`` (the file's ``fps``,
  ``frames_indices``, ``total_num_frames``, ``video_backend``). Since vLLM PR #47736 (in
  0.33) Qwen2.5-VL *requires* it (bare frames raise "Video metadata is required") and
  forwards it to the HF processor, where transformers 5 derives the temporal M-RoPE step
  from ``len(frames_indices) / total_num_frames * fps``. Older vLLM drops the metadata,
  and transformers 4.57 takes that step from the ``fps`` processor kwarg instead (default
  2.0, wrong for most clips). So the request carries both the metadata and ``fps`` = the
  sampled rate computed the same way; transformers 5 ignores the kwarg when it does not
  sample frames. It is a scalar: transformers 5's strict kwarg check rejects a list.
- ``do_sample_frames=False`` in ``mm_processor_kwargs`` stops the HF video processor from
  re-sampling frames that qwen-vl-utils already chose.
- Qwen3-VL (vLLM 0.32): the engine writes each frame pair's ``<t seconds>`` from the same
  metadata (``frames_indices / fps``, averaged over the pair) and tokenizes each timestamp on
  its own; with transformers >= 5.10 it keeps the outer ``<|vision_start|>``/``<|vision_end|>``
  around the per-frame sequence, 2 tokens more than transformers 4.57's HF backend
  (:attr:`~vlm_reward.judging.model_family.ModelFamily.kept_video_wrap_tokens`).
- The prompt is the processor's chat template text; vLLM expands each
  ``<|vision_start|><|video_pad|><|vision_end|>`` (or ``<|image_pad|>``) itself, in order,
  so images and videos are given as lists in the order they appear in the message.
- ``vllm.AsyncLLMEngine`` is V1's ``AsyncLLM``; ``generate(prompt, params, request_id)``
  is an async generator, and cancelling the task that iterates it aborts the request
  (vLLM 0.32's ``AsyncLLM.generate`` catches ``CancelledError`` and calls ``abort``).
  ``RequestOutputKind.FINAL_ONLY`` yields only the finished output. The engine is created
  off any running event loop and starts its output handler on the loop of the first
  ``generate``, the backend's own.
- ``SamplingParams.max_tokens`` defaults to 16, so a default is always set here; vLLM's
  own ranges (temperature in [0, 2], top_p in (0, 1], top_k >= -1, max_tokens >= 1) are
  checked before a request reaches the engine.

Accepted ``backend_kwargs``:

- engine, server-wide only (``--backend-kwargs``): ``max_model_len`` (16384),
  ``gpu_memory_utilization`` (0.85), ``tensor_parallel_size`` (1), ``dtype`` ("auto"),
  ``enforce_eager`` (False), ``max_num_seqs`` (vLLM's default), ``trust_remote_code``
  (False). ``limit_mm_per_prompt`` is fixed at 2 images + 1 video, what the layouts need.
- sampling, server-wide or per request: ``temperature``, ``top_p``, ``top_k``,
  ``max_tokens`` (alias ``max_new_tokens``, the transformers name), ``seed``,
  ``repetition_penalty``, ``stop`` (up to ``vllm_settings.MAX_STOP_SEQUENCES``), and
  ``do_sample`` as in the HF backend (false: greedy, i.e. temperature 0; true: sample, at
  temperature 1 unless one is given), so a request means the same on both backends.
- prompt, server-wide or per request: ``prompt``, ``system_prompt``,
  ``question_template``, ``frame_layout`` (see :mod:`vlm_reward.judging.prompts`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

from vlm_reward.backends.answer_tokens import (
    ScaleTokens,
    answer_tokens_or_error,
    probability_answer,
    probability_sampling,
    require_answer_tokens,
)
from vlm_reward.backends.async_base import AsyncRewardBackend
from vlm_reward.backends.base import ProbabilityAnswer, ScoreJob, register_backend
from vlm_reward.backends.checkpoint_family import FamilyCheckpoint
from vlm_reward.backends.qwen_vision import job_clip, job_messages, load_vision_inputs, qwen_frame_indices
from vlm_reward.backends.vllm_settings import check_backend_kwargs, engine_kwargs, sampling_params_kwargs
from vlm_reward.judging.model_family import ModelFamily
from vlm_reward.judging.prompts import PromptSpec, ServerPrompts
from vlm_reward.protocol import TEXT_SCORE_MODES

INSTALL_HINT = "pip install 'libero-vlm-reward[vllm]'"

logger = logging.getLogger(__name__)


def build_vllm_request(
    spec: PromptSpec, job: ScoreJob, processor: Any, family: ModelFamily, prefix: str = ""
) -> dict[str, Any]:
    """One ``llm.generate`` prompt dict for ``job``: chat text (then ``prefix``, the start of
    the assistant's answer), frames, processor kwargs.

    ``processor`` is anything with the checkpoint's chat template ``apply_chat_template``
    (the HF processor, or its tokenizer). The frames are the job's clip (decoded once by the
    server; and, for the ``first_video_last`` layout, its first and last frame), prepared as
    for the HF backend, sized for ``family``. The metadata carried with the frames is what
    Qwen3-VL's processor writes the frame timestamps from.
    """
    clip = job_clip(job)
    messages = job_messages(spec, job, clip)
    prompt = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) + prefix
    vision = load_vision_inputs(messages, clip, family, job.native_frame_size)
    mm_data: dict[str, Any] = {"video": list(zip(vision.videos, vision.video_metadata, strict=True))}
    if vision.images:
        mm_data["image"] = vision.images
    # Both layouts hold exactly one video, hence the one scalar fps.
    [fps] = vision.video_kwargs["fps"]
    return {
        "prompt": prompt,
        "multi_modal_data": mm_data,
        "mm_processor_kwargs": {"do_sample_frames": False, "fps": fps},
    }


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise ImportError(f"the vLLM backends need vLLM, which is not installed: {INSTALL_HINT}") from exc
    return vllm


@register_backend
class QwenVllmBackend(FamilyCheckpoint, AsyncRewardBackend):
    """Qwen-VL on vLLM; subclasses change only the class-level data below.

    ``default_preset`` names the prompt preset in :data:`vlm_reward.judging.prompts.PRESETS`;
    ``sampling_defaults`` are the SamplingParams used unless ``backend_kwargs`` override them.
    """

    name = "qwen_vl_vllm"
    judge_kind = "video VLM"
    # The name from when it served Qwen2.5-VL only; existing configs keep working.
    aliases = ("qwen2_5_vl_vllm",)
    default_preset: ClassVar[str] = "qwen"
    default_score_mode = "probability"
    score_modes = (*TEXT_SCORE_MODES, "probability")
    # Greedy: a reward should not change between two calls on the same episode.
    sampling_defaults: ClassVar[Mapping[str, Any]] = {"temperature": 0.0, "max_tokens": 256}

    def __init__(self, model: str, **backend_kwargs: Any) -> None:
        super().__init__(model, **backend_kwargs)
        check_backend_kwargs(backend_kwargs, per_request=False)
        self._engine_kwargs = engine_kwargs(backend_kwargs)
        self._sampling = {**self.sampling_defaults, **sampling_params_kwargs(backend_kwargs)}
        self.prompts = ServerPrompts(self.default_preset, backend_kwargs)
        self._vllm: Any = None
        self._engine: Any = None
        self._processor: Any = None
        self._answer_tokens: ScaleTokens | None = None

    async def load_async(self) -> None:
        """Start vLLM's async engine and load the processor whose chat template builds prompts."""
        vllm = _import_vllm()
        from transformers import AutoProcessor

        trust = self._engine_kwargs["trust_remote_code"]
        self.resolve_family(trust_remote_code=trust)
        self._processor = AutoProcessor.from_pretrained(self.model, trust_remote_code=trust)
        self._answer_tokens = answer_tokens_or_error(self._processor.tokenizer)
        args = vllm.AsyncEngineArgs(model=self.model, **self._engine_kwargs)
        self._engine = vllm.AsyncLLMEngine.from_engine_args(args)
        self._vllm = vllm

    def job_settings(self, job: ScoreJob) -> tuple[PromptSpec, dict[str, Any]]:
        """The prompt and SamplingParams kwargs for ``job``: server settings plus its overrides.

        In score_mode "probability" the SamplingParams are :func:`probability_sampling`'s
        (one step, the log-probabilities of the preset's answer tokens), whatever the
        sampling settings.
        """
        mode, overrides = job.score_mode or self.default_score_mode, job.backend_kwargs
        sampling = self.sampling(overrides)  # validates the request's kwargs in either mode
        spec = self.prompts.for_job(mode, overrides)
        if mode == "probability":
            tokens = require_answer_tokens(self._answer_tokens, spec.answer_scale, self.name)
            sampling = probability_sampling(tokens)
        return spec, sampling

    def sampling(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """SamplingParams kwargs: the server's, with a request's ``backend_kwargs`` applied."""
        check_backend_kwargs(overrides, per_request=True)
        return {**self._sampling, **sampling_params_kwargs(overrides)}

    def frame_indices(self, total_frames: int, nframes: int) -> list[int]:
        """The frames qwen-vl-utils would read (see :func:`qwen_frame_indices`)."""
        return qwen_frame_indices(total_frames, nframes)

    def token_budget(self, backend_kwargs: Mapping[str, Any]) -> int:
        """``max_tokens`` of a request with these ``backend_kwargs``."""
        return int(self.sampling(backend_kwargs)["max_tokens"])

    async def generate_one(self, job: ScoreJob) -> str | ProbabilityAnswer:
        """One engine request for ``job``; cancelling this coroutine aborts it in the engine.

        Settings and the video are checked first (a bad job raises before the engine sees
        it); the video is read off the event loop, which meanwhile keeps the engine's
        outputs flowing to the other requests.
        """
        if self._engine is None:
            raise RuntimeError(f"backend {self.name!r} is not loaded; call load() first.")
        spec, sampling = self.job_settings(job)
        probability = "logprob_token_ids" in sampling
        prefix = spec.answer_prefix if probability else ""
        request = await asyncio.to_thread(
            build_vllm_request, spec, job, self._processor, self.require_family(), prefix
        )
        final_only = self._vllm.sampling_params.RequestOutputKind.FINAL_ONLY
        params = self._vllm.SamplingParams(**sampling, output_kind=final_only)
        output, request_id = None, uuid.uuid4().hex
        try:
            async for latest in self._engine.generate(request, params, request_id=request_id):
                output = latest  # FINAL_ONLY: the one finished output
        except asyncio.CancelledError:
            logger.info("vLLM request %s aborted: nobody waits for its answer any more", request_id)
            raise
        if output is None:
            raise RuntimeError("vLLM finished the request without an output.")
        completion = output.outputs[0]
        job.usage.record(len(output.prompt_token_ids), len(completion.token_ids))
        # The engine's own prompt length shows how many frames it really got (a resampled
        # video has far fewer tokens); the end-to-end tests compare it with the HF backend's.
        logger.info(
            "vLLM prompt_tokens=%d output_tokens=%d finish_reason=%s",
            len(output.prompt_token_ids),
            len(completion.token_ids),
            completion.finish_reason,
        )
        if not probability:
            return completion.text
        [first_step] = completion.logprobs  # one step: the first answer position
        tokens = require_answer_tokens(self._answer_tokens, spec.answer_scale, self.name)
        return probability_answer({token: lp.logprob for token, lp in first_step.items()}, tokens)

    async def close_async(self) -> None:
        """Shut the engine down (its processes and memory)."""
        if self._engine is not None:
            self._engine.shutdown()
        self._engine = None
        self._processor = None
