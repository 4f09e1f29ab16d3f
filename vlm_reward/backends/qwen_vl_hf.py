"""Qwen-VL models (Qwen2.5-VL, Qwen3-VL) through transformers: the backend that runs without a GPU.

Same prompts and frames as the vLLM backends (messages and qwen-vl-utils reading come
from :mod:`vlm_reward.backends.qwen_vision`), run with the ``generate`` of the model class
the checkpoint's family names (:mod:`vlm_reward.judging.model_family`, read from ``config.json``:
``Qwen2_5_VLForConditionalGeneration``, ``Qwen3VLForConditionalGeneration``). It exists for
CPU-only machines, for tests (on the tiny offline checkpoints of
:mod:`vlm_reward.tools.tiny_checkpoint`) and as a reference implementation to compare vLLM against.

The "messages -> model inputs" step is two plain functions, :func:`render_prompt` and
:func:`processor_inputs`, so it is testable without generating; the decoding settings
(which ``backend_kwargs``, their validation, the ``generate`` arguments they mean) are
:mod:`vlm_reward.backends.hf_generation`'s. In score_mode "probability" (the default) a
job needs no generation at all: one forward pass gives P(yes) at the first answer position
(:mod:`vlm_reward.backends.answer_tokens`).

Accepted ``backend_kwargs``:

- load-time, server-wide only: ``device`` ("cpu" (default), "cuda", "cuda:N"), ``dtype``
  ("auto" (default: float32 on CPU, where half precision is slow, the checkpoint's dtype
  elsewhere), "float32", "bfloat16", "float16").
- generation, server-wide or per request: ``max_new_tokens`` (alias ``max_tokens``, the
  vLLM name; default: the checkpoint's generation config, else 512; the server refuses
  budgets above its ``--max-new-tokens``), ``do_sample``
  (default: true only when a positive ``temperature`` is given, so a request means the
  same thing here and on vLLM, where temperature 0 is greedy), ``temperature``.
- prompt, server-wide or per request: ``prompt``, ``system_prompt``,
  ``question_template``, ``frame_layout`` (see :mod:`vlm_reward.judging.prompts`). Request
  overrides apply on top of the server's prompt, as in the vLLM backends.

A job whose ``cancelled`` event is set (its client left, the server is stopping) is
stopped after the current token by a stopping criterion, without ending its batch-mates,
and answers :class:`~vlm_reward.backends.base.JobCancelledError`.

Scaling. A job's CPU steps (prompt, frames resized, the processor) start on a pool of
:data:`PREPARE_WORKERS` threads as soon as the server queues it (:mod:`vlm_reward.backends.prefetch`),
each thread with its own copy of the processor, so a batch's videos are prepared in parallel with
each other and with the batch before; the per-job outputs are joined into the processor's batch
(:mod:`vlm_reward.backends.input_batch`). The model's vision encoder runs the project's own
attention and patch embedding (:mod:`vlm_reward.backends.vision_encoder`): one attention call per
window length instead of one per window. A Qwen2.5-VL places a video's frames in time as vLLM does
(:mod:`vlm_reward.backends.video_positions`), so a judge answers alike on both engines.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from vlm_reward.backends.answer_tokens import (
    ScaleTokens,
    answer_tokens_or_error,
    probability_answer,
    require_answer_tokens,
)
from vlm_reward.backends.base import (
    JobCancelledError,
    ProbabilityAnswer,
    RewardBackend,
    ScoreJob,
    register_backend,
)
from vlm_reward.backends.checkpoint_family import FamilyCheckpoint
from vlm_reward.backends.hf_generation import (
    INSTALL_HINT,
    GenerationSettings,
    cancel_criterion,
    check_backend_kwargs,
    check_load_settings,
    generation_settings,
    import_torch_transformers,
    limit_cpu_threads,
    torch_dtype,
)
from vlm_reward.backends.input_batch import join_inputs
from vlm_reward.backends.prefetch import Prefetcher
from vlm_reward.backends.qwen_vision import (
    VisionInputs,
    job_clip,
    job_messages,
    load_vision_inputs,
    qwen_frame_indices,
)
from vlm_reward.judging.probability import AnswerTokens
from vlm_reward.judging.prompts import PromptSpec, ServerPrompts
from vlm_reward.protocol import TEXT_SCORE_MODES

__all__ = ["INSTALL_HINT", "QwenHFBackend", "processor_inputs", "render_prompt"]

# Threads preparing queued jobs: the CPUs this process may use, at most a full default batch.
PREPARE_WORKERS = max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2))


def render_prompt(processor: Any, messages: list[dict[str, Any]]) -> str:
    """The chat-template text of ``messages``, ending with the assistant turn's opening."""
    return processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def processor_inputs(processor: Any, texts: Sequence[str], vision: Sequence[VisionInputs]) -> Any:
    """Run the HF processor on a batch: one prompt text and one :class:`VisionInputs` per job.

    The processor expands each ``<|image_pad|>`` / ``<|video_pad|>`` from the flat image and
    video lists in order, so the per-job lists are concatenated in job order. Padding side
    is the tokenizer's (left for generation, set by the backend). Videos go with both their
    sampled ``fps`` (Qwen2.5-VL's temporal M-RoPE step) and their metadata (Qwen3-VL's
    timestamps); each family's processor ignores what it does not use.
    """
    if len(texts) != len(vision):
        raise ValueError(f"got {len(texts)} prompt texts for {len(vision)} vision inputs.")
    images = [image for v in vision for image in v.images]
    videos = [video for v in vision for video in v.videos]
    kwargs: dict[str, Any] = {"padding": True, "return_tensors": "pt"}
    if videos:
        rates = [fps for v in vision for fps in v.video_kwargs["fps"]]
        # One rate as a number: transformers 5 takes only that (openai_compatible counts its
        # prompts with this function in either venv); 4.57 also takes one per video.
        kwargs.update(
            do_sample_frames=False,
            fps=rates[0] if len(set(rates)) == 1 else rates,
            video_metadata=[meta for v in vision for meta in v.video_metadata],
        )
    return processor(text=list(texts), images=images or None, videos=videos or None, **kwargs)


@dataclass
class PreparedJob:
    """A job's model inputs, built before its batch: the prompt text, the processor's tensors for
    it alone, its decoding settings and, in probability mode, the answer tokens read.

    It holds nothing of the job itself, so a prepared result never keeps its job alive, and not
    the resized frames either: the processor's pixels are all the model needs of them.
    """

    text: str
    inputs: Any
    settings: GenerationSettings
    tokens: AnswerTokens | None  # the answer tokens read in probability mode, else None


@dataclass
class _Slot:
    slot: int
    job: ScoreJob
    prepared: PreparedJob


@register_backend
class QwenHFBackend(FamilyCheckpoint, RewardBackend):
    """Qwen-VL with transformers; ``default_preset`` picks the prompt preset of the text modes."""

    name = "qwen_vl_hf"
    judge_kind = "video VLM"
    # The name from when it served Qwen2.5-VL only; existing configs keep working.
    aliases = ("qwen2_5_vl_hf",)
    default_preset: ClassVar[str] = "qwen"
    default_score_mode = "probability"
    score_modes = (*TEXT_SCORE_MODES, "probability")

    def __init__(self, model: str, **backend_kwargs: Any) -> None:
        super().__init__(model, **backend_kwargs)
        check_backend_kwargs(backend_kwargs, per_request=False)
        self.device, self.dtype = check_load_settings(backend_kwargs)
        self.prompts = ServerPrompts(self.default_preset, backend_kwargs)
        self._settings = generation_settings(backend_kwargs, GenerationSettings())
        self._model: Any = None
        self._processor: Any = None
        self._checkpoint_budget: int | None = None
        self._answer_tokens: ScaleTokens | None = None
        self._prefetch: Prefetcher[ScoreJob, PreparedJob] | None = None

    def load(self) -> None:
        """Load the processor and weights onto ``device``; ``ImportError`` names the extra to install.

        The checkpoint's family (from its config alone) picks the model class first, so an
        unsupported checkpoint fails before any weight is read.
        """
        torch, transformers = import_torch_transformers()
        family = self.resolve_family()
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise RuntimeError(
                f"backend_kwargs['device'] is {self.device!r} but no CUDA device is available."
            )
        if self.device == "cpu":
            limit_cpu_threads(torch)
        processor = transformers.AutoProcessor.from_pretrained(self.model)
        # Left padding: every prompt in a batch then ends at the same position, where the
        # new tokens start.
        processor.tokenizer.padding_side = "left"
        model = getattr(transformers, family.model_class).from_pretrained(
            self.model, dtype=torch_dtype(torch, self.dtype, self.device)
        )
        from vlm_reward.backends import video_positions, vision_encoder

        vision_encoder.install(model)
        video_positions.install(model)  # time in the video's positions, as on vLLM
        self._model = model.to(self.device).eval()
        self._processor = processor
        # Each preparing thread gets its own processor: a fast tokenizer is not thread-safe.
        self._prefetch = Prefetcher(
            self._prepare_job, lambda: copy.deepcopy(processor), workers=PREPARE_WORKERS, name=self.name
        )
        self._checkpoint_budget = model.generation_config.max_new_tokens
        self._answer_tokens = answer_tokens_or_error(processor.tokenizer)

    def job_settings(self, job: ScoreJob) -> tuple[PromptSpec, GenerationSettings]:
        """The prompt and decoding settings for ``job``: the server's, with its overrides applied."""
        check_backend_kwargs(job.backend_kwargs, per_request=True)
        spec = self.prompts.for_job(job.score_mode or self.default_score_mode, job.backend_kwargs)
        return spec, generation_settings(job.backend_kwargs, self._settings)

    def frame_indices(self, total_frames: int, nframes: int) -> list[int]:
        """The frames qwen-vl-utils would read (see :func:`qwen_frame_indices`)."""
        return qwen_frame_indices(total_frames, nframes)

    def token_budget(self, backend_kwargs: Mapping[str, Any]) -> int:
        """This request's new-token budget (the checkpoint's default counts once loaded)."""
        check_backend_kwargs(backend_kwargs, per_request=True)
        return generation_settings(backend_kwargs, self._settings).budget(self._checkpoint_budget)

    def generate(self, jobs: Sequence[ScoreJob]) -> list[str | ProbabilityAnswer | Exception]:
        """One model call per group of jobs: a ``generate`` per set of equal decoding settings,
        one forward pass for the jobs in score_mode "probability".

        A job whose settings or video are bad gets its own exception; a failing call fails
        only the jobs of its group.
        """
        if self._model is None:
            raise RuntimeError(f"backend {self.name!r} is not loaded; call load() first.")
        results: list[str | ProbabilityAnswer | Exception] = [RuntimeError("no output")] * len(jobs)
        groups: dict[GenerationSettings | str, list[_Slot]] = {}
        for slot, job in enumerate(jobs):
            if job.cancelled.is_set():
                results[slot] = JobCancelledError("the job was cancelled before it started.")
                continue
            try:
                prepared = self.prepare(job)
            except Exception as exc:  # one bad job must not fail its batch-mates
                results[slot] = exc
                continue
            key = "probability" if prepared.tokens is not None else prepared.settings
            groups.setdefault(key, []).append(_Slot(slot, job, prepared))
        for key, group in groups.items():
            try:
                answers = self._judge(group) if key == "probability" else self._run(group, key)
            except Exception as exc:
                answers = [exc] * len(group)
            for item, answer in zip(group, answers, strict=True):
                results[item.slot] = answer
        return results

    def prepare_ahead(self, job: ScoreJob) -> None:
        """Start ``job``'s CPU steps on the preparing threads (see the module docstring)."""
        if self._prefetch is not None:
            self._prefetch.start(job)

    def prepare(self, job: ScoreJob) -> PreparedJob:
        """``job``'s inputs: the prepared ones if :meth:`prepare_ahead` started them, else built here."""
        if self._prefetch is None:
            raise RuntimeError(f"backend {self.name!r} is not loaded; call load() first.")
        return self._prefetch.take(job)

    def _prepare_job(self, job: ScoreJob, processor: Any) -> PreparedJob:
        """Prompt, pixels, tensors and settings of one job, with this thread's ``processor``; in
        probability mode the prompt ends with the preset's answer prefix (the answer tokens are
        read right after it)."""
        spec, settings = self.job_settings(job)
        tokens = None
        if (job.score_mode or self.default_score_mode) == "probability":
            tokens = require_answer_tokens(self._answer_tokens, spec.answer_scale, self.name)
        clip = job_clip(job)
        messages = job_messages(spec, job, clip)
        text = render_prompt(processor, messages) + (spec.answer_prefix if tokens else "")
        vision = load_vision_inputs(messages, clip, self.require_family(), job.native_frame_size)
        return PreparedJob(text, processor_inputs(processor, [text], [vision]), settings, tokens)

    def _model_inputs(self, prepared: Sequence[PreparedJob]) -> Any:
        """The batch's tensors on the model's device: the jobs' own processor outputs, joined."""
        tokenizer = self._processor.tokenizer
        parts = [p.inputs for p in prepared]
        inputs = join_inputs(parts, tokenizer.pad_token_id, tokenizer.padding_side).to(self._model.device)
        # Pixels go in at the model's dtype; the processor emits float32.
        for key in ("pixel_values", "pixel_values_videos"):
            if key in inputs:
                inputs[key] = inputs[key].to(self._model.dtype)
        return inputs

    def _judge(self, group: list[_Slot]) -> list[ProbabilityAnswer]:
        """Each job's expected answer score from one forward pass: the next-token distribution
        after its prompt, read at its preset's answer tokens (yes/no: P(yes)).

        Left padding puts every prompt's end at the last position.
        """
        import torch

        inputs = self._model_inputs([item.prepared for item in group])
        with torch.inference_mode():
            logits = self._model(**inputs).logits[:, -1, :]
        rows = torch.log_softmax(logits.float(), dim=-1)
        answers = []
        for item, row, prompt in zip(group, rows, _prompt_lengths(inputs), strict=True):
            item.job.usage.record(prompt, generated=1)
            tokens = item.prepared.tokens
            answers.append(
                probability_answer(dict(zip(tokens.ids, row[tokens.ids].tolist(), strict=True)), tokens)
            )
        return answers

    def _run(self, group: list[_Slot], settings: GenerationSettings) -> list[str | Exception]:
        import torch
        from transformers import StoppingCriteriaList

        inputs = self._model_inputs([item.prepared for item in group])
        kwargs = settings.generate_kwargs(self._checkpoint_budget)
        stop = StoppingCriteriaList([cancel_criterion([p.job for p in group])])
        with torch.inference_mode():
            output = self._model.generate(**inputs, **kwargs, stopping_criteria=stop)
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        texts = self._processor.batch_decode(new_tokens, skip_special_tokens=True)
        generated = _generated_lengths(new_tokens, self._model.generation_config.pad_token_id)
        for p, prompt, count in zip(group, _prompt_lengths(inputs), generated, strict=True):
            p.job.usage.record(prompt, count)
        return [
            JobCancelledError("the job was cancelled while it was generating.")
            if p.job.cancelled.is_set()
            else text
            for p, text in zip(group, texts, strict=True)
        ]

    def close(self) -> None:
        """Drop the model and processor so their memory can be reclaimed."""
        if self._prefetch is not None:
            self._prefetch.close()
        self._model = None
        self._processor = None


def _prompt_lengths(inputs: Any) -> list[int]:
    """Each row's prompt tokens, text and vision: its attention mask without the left padding."""
    return inputs["attention_mask"].sum(dim=1).tolist()


def _generated_lengths(new_tokens: Any, pad_token_id: int | None) -> list[int]:
    """Each row's generated tokens: a row that stopped early is padded to the longest, and
    its padding was never generated (where the pad id is the stop token, that is not counted)."""
    if pad_token_id is None:
        return [new_tokens.shape[1]] * new_tokens.shape[0]
    return (new_tokens != pad_token_id).sum(dim=1).tolist()
