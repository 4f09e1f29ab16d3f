"""Qwen2.5-VL through transformers: the backend that runs without a GPU.

Same prompts and frames as the vLLM backends (messages and qwen-vl-utils reading come
from :mod:`vlm_reward.backends.qwen_vision`), run with
``Qwen2_5_VLForConditionalGeneration.generate``. It exists for CPU-only machines, for
tests (on the tiny offline checkpoint of :mod:`vlm_reward.tiny_checkpoint`) and as a
reference implementation to compare vLLM against.

The "messages -> model inputs" step is two plain functions, :func:`render_prompt` and
:func:`processor_inputs`, so it is testable without generating.

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
  ``question_template``, ``frame_layout`` (see :mod:`vlm_reward.prompts`). Request
  overrides apply on top of the server's prompt, as in the vLLM backends.

A job whose ``cancelled`` event is set (its client left, the server is stopping) is
stopped after the current token by a stopping criterion, without ending its batch-mates,
and answers :class:`~vlm_reward.backends.base.JobCancelledError`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from vlm_reward.backends.base import (
    JobCancelledError,
    ProbabilityAnswer,
    RewardBackend,
    ScoreJob,
    register_backend,
)
from vlm_reward.backends.judging import answer_tokens_or_error, probability_answer, require_answer_tokens
from vlm_reward.backends.qwen_vision import (
    VisionInputs,
    job_clip,
    job_messages,
    load_vision_inputs,
    qwen_frame_indices,
)
from vlm_reward.probability import AnswerTokens
from vlm_reward.prompts import PROMPT_OVERRIDE_KEYS, PromptSpec, ServerPrompts
from vlm_reward.protocol import TEXT_SCORE_MODES

INSTALL_HINT = "pip install 'libero-vlm-reward[hf]'"

LOAD_KEYS = ("device", "dtype")
GENERATION_KEYS = ("max_new_tokens", "max_tokens", "do_sample", "temperature")
REQUEST_KEYS = (*PROMPT_OVERRIDE_KEYS, *GENERATION_KEYS)
SERVER_KEYS = (*REQUEST_KEYS, *LOAD_KEYS)

DTYPES = ("auto", "float32", "bfloat16", "float16")
_DEVICE_RE = re.compile(r"cpu|cuda(:\d+)?")
# Used when neither the request nor the checkpoint's generation config sets a budget
# (transformers would otherwise stop at max_length=20, mid-answer).
FALLBACK_MAX_NEW_TOKENS = 512


@dataclass(frozen=True)
class GenerationSettings:
    """Decoding settings of one job; hashable so jobs with equal settings share a ``generate`` call.

    ``max_new_tokens=None`` means "the checkpoint's default"; ``temperature`` only
    matters when ``do_sample``.
    """

    max_new_tokens: int | None = None
    do_sample: bool = False
    temperature: float | None = None

    def budget(self, checkpoint_max_new_tokens: int | None) -> int:
        """The new-token budget: this job's own, else the checkpoint's default, else 512."""
        return self.max_new_tokens or checkpoint_max_new_tokens or FALLBACK_MAX_NEW_TOKENS

    def generate_kwargs(self, checkpoint_max_new_tokens: int | None) -> dict[str, Any]:
        """Keyword arguments for ``model.generate``."""
        budget = self.budget(checkpoint_max_new_tokens)
        if self.do_sample:
            kwargs: dict[str, Any] = {"do_sample": True}
            if self.temperature is not None:
                kwargs["temperature"] = self.temperature
            return {"max_new_tokens": budget, **kwargs}
        # Greedy: clear the checkpoint's sampling knobs (Qwen ships temperature/top_p/top_k)
        # so transformers does not warn that they are ignored.
        return {
            "max_new_tokens": budget,
            "do_sample": False,
            "temperature": None,
            "top_p": None,
            "top_k": None,
        }


def check_backend_kwargs(kwargs: Mapping[str, Any], *, per_request: bool) -> None:
    """``ValueError`` naming the valid keys if ``kwargs`` has one this backend does not take.

    ``device`` and ``dtype`` are valid only server-wide: they decide how the weights are
    loaded, which one request cannot change.
    """
    allowed = REQUEST_KEYS if per_request else SERVER_KEYS
    unknown = sorted(set(kwargs) - set(allowed))
    if not unknown:
        return
    hint = ""
    if per_request and set(unknown) & set(LOAD_KEYS):
        hint = " (device and dtype are load-time settings: pass them server-wide)"
    where = "per request" if per_request else "for this backend"
    raise ValueError(
        f"unknown backend_kwargs {', '.join(map(repr, unknown))} for qwen2_5_vl_hf{hint}; "
        f"valid keys {where}: {', '.join(sorted(allowed))}."
    )


def generation_settings(kwargs: Mapping[str, Any], base: GenerationSettings) -> GenerationSettings:
    """``base`` with the generation keys of ``kwargs`` applied, validated."""
    if "max_new_tokens" in kwargs and "max_tokens" in kwargs:
        raise ValueError("give either backend_kwargs['max_new_tokens'] or ['max_tokens'], not both.")
    budget = kwargs.get("max_new_tokens", kwargs.get("max_tokens", base.max_new_tokens))
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise ValueError(f"backend_kwargs['max_new_tokens'] must be a positive integer, got {budget!r}.")
    temperature = kwargs.get("temperature", base.temperature)
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not math.isfinite(temperature)
        or temperature < 0
    ):
        raise ValueError(f"backend_kwargs['temperature'] must be a number >= 0, got {temperature!r}.")
    do_sample = kwargs.get("do_sample")
    if do_sample is None:
        do_sample = bool(temperature) if "temperature" in kwargs else base.do_sample
    if not isinstance(do_sample, bool):
        raise ValueError(f"backend_kwargs['do_sample'] must be true or false, got {do_sample!r}.")
    if do_sample and temperature == 0:
        raise ValueError(
            "backend_kwargs['do_sample'] is true but temperature is 0; use a positive temperature."
        )
    return GenerationSettings(budget, do_sample, None if temperature is None else float(temperature))


def check_load_settings(kwargs: Mapping[str, Any]) -> tuple[str, str]:
    """The validated ``(device, dtype)`` from server-wide ``kwargs``."""
    device, dtype = kwargs.get("device", "cpu"), kwargs.get("dtype", "auto")
    if not isinstance(device, str) or not _DEVICE_RE.fullmatch(device):
        raise ValueError(f"backend_kwargs['device'] must be 'cpu', 'cuda' or 'cuda:N', got {device!r}.")
    if dtype not in DTYPES:
        raise ValueError(f"backend_kwargs['dtype'] must be one of {', '.join(DTYPES)}, got {dtype!r}.")
    return device, dtype


def render_prompt(processor: Any, messages: list[dict[str, Any]]) -> str:
    """The chat-template text of ``messages``, ending with the assistant turn's opening."""
    return processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def processor_inputs(processor: Any, texts: Sequence[str], vision: Sequence[VisionInputs]) -> Any:
    """Run the HF processor on a batch: one prompt text and one :class:`VisionInputs` per job.

    The processor expands each ``<|image_pad|>`` / ``<|video_pad|>`` from the flat image and
    video lists in order, so the per-job lists are concatenated in job order. Padding side
    is the tokenizer's (left for generation, set by the backend).
    """
    if len(texts) != len(vision):
        raise ValueError(f"got {len(texts)} prompt texts for {len(vision)} vision inputs.")
    images = [image for v in vision for image in v.images]
    videos = [video for v in vision for video in v.videos]
    kwargs: dict[str, Any] = {"padding": True, "return_tensors": "pt"}
    if videos:
        kwargs.update(do_sample_frames=False, fps=[fps for v in vision for fps in v.video_kwargs["fps"]])
    return processor(text=list(texts), images=images or None, videos=videos or None, **kwargs)


def cancel_criterion(jobs: Sequence[ScoreJob]) -> Any:
    """A transformers stopping criterion that ends each row whose job was cancelled.

    ``generate`` calls it after every token; rows it marks done are padded from then on,
    and the call returns once every row is done, so cancelling one job frees the model for
    the queue as soon as its batch-mates (if any) finish.
    """
    import torch
    from transformers import StoppingCriteria

    class Cancelled(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            flags = [job.cancelled.is_set() for job in jobs]
            return torch.tensor(flags, dtype=torch.bool, device=input_ids.device)

    return Cancelled()


def _import_torch_transformers() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ImportError(f"the qwen2_5_vl_hf backend needs torch and transformers: {INSTALL_HINT}") from exc
    return torch, transformers


def _limit_cpu_threads(torch: Any) -> None:
    """Never use more intra-op threads than CPUs this process may run on.

    torch defaults to the machine's physical cores, which in a container or under
    ``taskset`` can exceed the CPUs actually granted and then oversubscribes them.
    """
    granted = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if torch.get_num_threads() > granted:
        torch.set_num_threads(granted)


def _torch_dtype(torch: Any, dtype: str, device: str) -> Any:
    """The ``from_pretrained`` dtype for a ``dtype`` setting (see the module docstring)."""
    if dtype == "auto":
        # Half precision on CPU is slow and partly unsupported; elsewhere keep the checkpoint's.
        return torch.float32 if device == "cpu" else "auto"
    return getattr(torch, dtype)


@dataclass
class _PreparedJob:
    slot: int
    job: ScoreJob
    text: str
    vision: VisionInputs
    settings: GenerationSettings


@register_backend
class QwenHFBackend(RewardBackend):
    """Qwen2.5-VL with transformers; ``default_preset`` picks the prompt preset of the text modes."""

    name = "qwen2_5_vl_hf"
    default_preset: ClassVar[str] = "qwen"
    default_score_mode = "probability"
    score_modes = (*TEXT_SCORE_MODES, "probability")

    def __init__(self, model: str, **backend_kwargs: Any) -> None:
        super().__init__(model, **backend_kwargs)
        check_backend_kwargs(backend_kwargs, per_request=False)
        self.device, self.dtype = check_load_settings(backend_kwargs)
        self._prompts = ServerPrompts(self.default_preset, backend_kwargs)
        self._settings = generation_settings(backend_kwargs, GenerationSettings())
        self._model: Any = None
        self._processor: Any = None
        self._checkpoint_budget: int | None = None
        self._answer_tokens: AnswerTokens | ValueError | None = None

    def load(self) -> None:
        """Load the processor and weights onto ``device``; ``ImportError`` names the extra to install."""
        torch, transformers = _import_torch_transformers()
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise RuntimeError(
                f"backend_kwargs['device'] is {self.device!r} but no CUDA device is available."
            )
        if self.device == "cpu":
            _limit_cpu_threads(torch)
        processor = transformers.AutoProcessor.from_pretrained(self.model)
        # Left padding: every prompt in a batch then ends at the same position, where the
        # new tokens start.
        processor.tokenizer.padding_side = "left"
        model = transformers.Qwen2_5_VLForConditionalGeneration.from_pretrained(
            self.model, dtype=_torch_dtype(torch, self.dtype, self.device)
        )
        self._model = model.to(self.device).eval()
        self._processor = processor
        self._checkpoint_budget = model.generation_config.max_new_tokens
        self._answer_tokens = answer_tokens_or_error(processor.tokenizer)

    def job_settings(self, job: ScoreJob) -> tuple[PromptSpec, GenerationSettings]:
        """The prompt and decoding settings for ``job``: the server's, with its overrides applied."""
        check_backend_kwargs(job.backend_kwargs, per_request=True)
        spec = self._prompts.for_job(job.score_mode or self.default_score_mode, job.backend_kwargs)
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
        groups: dict[GenerationSettings | str, list[_PreparedJob]] = {}
        for slot, job in enumerate(jobs):
            if job.cancelled.is_set():
                results[slot] = JobCancelledError("the job was cancelled before it started.")
                continue
            try:
                prepared = self._prepare(slot, job)
            except Exception as exc:  # one bad job must not fail its batch-mates
                results[slot] = exc
                continue
            probability = (job.score_mode or self.default_score_mode) == "probability"
            groups.setdefault("probability" if probability else prepared.settings, []).append(prepared)
        for key, group in groups.items():
            try:
                answers = self._judge(group) if key == "probability" else self._run(group, key)
            except Exception as exc:
                answers = [exc] * len(group)
            for prepared, answer in zip(group, answers, strict=True):
                results[prepared.slot] = answer
        return results

    def _prepare(self, slot: int, job: ScoreJob) -> _PreparedJob:
        spec, settings = self.job_settings(job)
        clip = job_clip(job)
        messages = job_messages(spec, job, clip)
        return _PreparedJob(
            slot, job, render_prompt(self._processor, messages), load_vision_inputs(messages, clip), settings
        )

    def _model_inputs(self, group: list[_PreparedJob]) -> Any:
        inputs = processor_inputs(self._processor, [p.text for p in group], [p.vision for p in group])
        inputs = inputs.to(self._model.device)
        # Pixels go in at the model's dtype; the processor emits float32.
        for key in ("pixel_values", "pixel_values_videos"):
            if key in inputs:
                inputs[key] = inputs[key].to(self._model.dtype)
        return inputs

    def _judge(self, group: list[_PreparedJob]) -> list[ProbabilityAnswer]:
        """P(yes) of each job from one forward pass: the next-token distribution after its prompt.

        Left padding puts every prompt's end at the last position.
        """
        import torch

        tokens = require_answer_tokens(self._answer_tokens, self.name)
        with torch.inference_mode():
            logits = self._model(**self._model_inputs(group)).logits[:, -1, :]
        logprobs = torch.log_softmax(logits.float(), dim=-1)[:, tokens.ids].tolist()
        return [probability_answer(dict(zip(tokens.ids, row, strict=True)), tokens) for row in logprobs]

    def _run(self, group: list[_PreparedJob], settings: GenerationSettings) -> list[str | Exception]:
        import torch
        from transformers import StoppingCriteriaList

        inputs = self._model_inputs(group)
        kwargs = settings.generate_kwargs(self._checkpoint_budget)
        stop = StoppingCriteriaList([cancel_criterion([p.job for p in group])])
        with torch.inference_mode():
            output = self._model.generate(**inputs, **kwargs, stopping_criteria=stop)
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        texts = self._processor.batch_decode(new_tokens, skip_special_tokens=True)
        return [
            JobCancelledError("the job was cancelled while it was generating.")
            if p.job.cancelled.is_set()
            else text
            for p, text in zip(group, texts, strict=True)
        ]

    def close(self) -> None:
        """Drop the model and processor so their memory can be reclaimed."""
        self._model = None
        self._processor = None
