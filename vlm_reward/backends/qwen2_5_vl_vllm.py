"""Qwen2.5-VL through vLLM's offline engine: the server's default backend.

The model sees one episode as a video (the "qwen" prompt preset) and answers with a
score. Everything that decides *what* vLLM receives lives in plain functions
(:func:`build_vllm_request`, :func:`sampling_params_kwargs`, :func:`engine_kwargs`) so
it is tested on machines without vLLM; only :meth:`QwenVllmBackend.load` and
:meth:`QwenVllmBackend.generate` import vLLM.

Targeted versions: vLLM 0.11 through 0.33 (both read at the source level), with
qwen-vl-utils >= 0.0.14. vLLM 0.11 runs with this project's transformers 4.57; vLLM
releases from the 0.2x series on require transformers 5.x, so they need their own
environment for the reward server.

Facts this module relies on (checked in the vLLM 0.11.0 and 0.33.0 wheels, transformers
4.57.6 and 5.16.1, qwen-vl-utils 0.0.14):

- qwen-vl-utils samples exactly ``nframes`` frames (uniform indices from the first to
  the last frame) when the video entry carries ``nframes``; without it, it samples at
  2 fps and silently drops frames. With ``return_video_metadata=True`` each video comes
  back as ``(frames, metadata)``: frames a float ``(T, C, H, W)`` tensor already resized
  to multiples of 28 within ``max_pixels``, metadata a dict with ``fps`` (the file's),
  ``frames_indices``, ``total_num_frames`` and ``video_backend``.
- vLLM >= 0.11 accepts a video as such a ``(frames, metadata)`` tuple. Since vLLM PR
  #47736 (in 0.33) Qwen2.5-VL *requires* the metadata (bare frames raise "Video
  metadata is required") and forwards it to the HF processor, where transformers 5
  derives the temporal M-RoPE step from ``len(frames_indices) / total_num_frames * fps``.
  Older vLLM drops the metadata, and transformers 4.57 takes that step from the ``fps``
  processor kwarg instead (default 2.0, wrong for our clips). So the request carries both
  the metadata and ``fps`` = the sampled rate computed the same way; transformers 5
  ignores the kwarg when it does not sample frames.
- ``do_sample_frames=False`` in ``mm_processor_kwargs`` stops the HF video processor from
  re-sampling frames that qwen-vl-utils already chose.
- The prompt is the processor's chat template text; vLLM expands each
  ``<|vision_start|><|video_pad|><|vision_end|>`` (or ``<|image_pad|>``) itself, in order,
  so images and videos are given as lists in the order they appear in the message.
- ``SamplingParams.max_tokens`` defaults to 16 in vLLM, so a default is always set here.

Accepted ``backend_kwargs``:

- engine, server-wide only (``--backend-kwargs``): ``max_model_len`` (16384),
  ``gpu_memory_utilization`` (0.85), ``tensor_parallel_size`` (1), ``dtype`` ("auto"),
  ``enforce_eager`` (False), ``max_num_seqs`` (vLLM's default), ``trust_remote_code``
  (False). ``limit_mm_per_prompt`` is fixed at 2 images + 1 video, what the layouts need.
- sampling, server-wide or per request: ``temperature``, ``top_p``, ``top_k``,
  ``max_tokens`` (alias ``max_new_tokens``, the transformers name), ``seed``,
  ``repetition_penalty``, ``stop``.
- prompt, server-wide or per request: ``prompt``, ``system_prompt``,
  ``question_template``, ``frame_layout`` (see :mod:`vlm_reward.prompts`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from vlm_reward.backends.base import RewardBackend, ScoreJob, register_backend
from vlm_reward.prompts import (
    PRESETS,
    PROMPT_OVERRIDE_KEYS,
    PromptSpec,
    build_messages,
    read_first_last_frames,
    resolve_prompt,
)

INSTALL_HINT = "pip install 'libero-vlm-reward[vllm]'"

# One video plus the PRIMO layout's first and last frame; vLLM sizes its profiling run
# from these limits, so they are no larger than the layouts need.
MM_LIMITS: Mapping[str, int] = {"image": 2, "video": 1}

ENGINE_DEFAULTS: Mapping[str, Any] = {
    "max_model_len": 16384,
    # Below vLLM's default so a reward server can share a GPU with a little else.
    "gpu_memory_utilization": 0.85,
    "tensor_parallel_size": 1,
    "dtype": "auto",
    "enforce_eager": False,
    "trust_remote_code": False,
}
# Engine keys with no default here: left out of the LLM call unless set.
ENGINE_OPTIONAL_KEYS = ("max_num_seqs",)
ENGINE_KEYS = frozenset((*ENGINE_DEFAULTS, *ENGINE_OPTIONAL_KEYS))

SAMPLING_KEYS = frozenset(
    ("temperature", "top_p", "top_k", "max_tokens", "max_new_tokens", "seed", "repetition_penalty", "stop")
)
REQUEST_KEYS = SAMPLING_KEYS | frozenset(PROMPT_OVERRIDE_KEYS)
SERVER_KEYS = REQUEST_KEYS | ENGINE_KEYS


def check_backend_kwargs(kwargs: Mapping[str, Any], *, per_request: bool) -> None:
    """Reject keys this backend does not know, naming the valid ones.

    Engine keys are only valid server-wide: changing them means rebuilding the engine,
    which a single request must not trigger.
    """
    allowed = REQUEST_KEYS if per_request else SERVER_KEYS
    unknown = sorted(set(kwargs) - allowed)
    if not unknown:
        return
    where = "per request" if per_request else "for this backend"
    hint = ""
    if per_request and ENGINE_KEYS & set(unknown):
        hint = " (engine settings are server-wide: pass them with --backend-kwargs)"
    raise ValueError(
        f"unknown backend_kwargs {', '.join(map(repr, unknown))}{hint}; "
        f"valid keys {where}: {', '.join(sorted(allowed))}."
    )


def _number(key: str, value: Any, *, integer: bool = False) -> float:
    """``value`` as a finite number (an int if ``integer``), or TypeError naming ``key``."""
    kinds = (int,) if integer else (int, float)
    # bool is an int subclass; True as a token count is a bug, not a number.
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value):
        kind = "an integer" if integer else "a finite number"
        raise TypeError(f"backend_kwargs[{key!r}] must be {kind}, got {value!r}.")
    return value


def _check_range(key: str, value: float, ok: bool, allowed: str) -> None:
    if not ok:
        raise ValueError(f"backend_kwargs[{key!r}] must be {allowed}, got {value!r}.")


def _stop_list(value: Any) -> list[str]:
    """``stop`` as a list of strings (vLLM accepts both, a list keeps one shape)."""
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list | tuple) or not all(isinstance(s, str) and s for s in stops):
        raise TypeError(f"backend_kwargs['stop'] must be a string or a list of non-empty strings, got {value!r}.")
    return list(stops)


def sampling_params_kwargs(backend_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The ``vllm.SamplingParams`` keyword arguments named in ``backend_kwargs``, validated.

    Non-sampling keys are ignored (they are the prompt's or the engine's). ``max_new_tokens``
    is accepted as the transformers spelling of ``max_tokens`` so the same request works
    against the HF backend; giving both is an error. Ranges are vLLM's own, checked here so
    a bad request fails as a 4xx before it reaches the engine.
    """
    given = {k: v for k, v in backend_kwargs.items() if k in SAMPLING_KEYS}
    if "max_tokens" in given and "max_new_tokens" in given:
        raise ValueError("give either backend_kwargs['max_tokens'] or ['max_new_tokens'], not both.")
    if "max_new_tokens" in given:
        given["max_tokens"] = given.pop("max_new_tokens")
    out: dict[str, Any] = {}
    for key, value in given.items():
        if key == "stop":
            out[key] = _stop_list(value)
            continue
        number = _number(key, value, integer=key in ("top_k", "max_tokens", "seed"))
        checks = {
            "temperature": (0 <= number <= 2, "in [0, 2]"),
            "top_p": (0 < number <= 1, "in (0, 1]"),
            "top_k": (number >= -1, "-1 or 0 (disabled) or a positive integer"),
            "max_tokens": (number >= 1, "at least 1"),
            "seed": (number >= 0, "non-negative"),
            "repetition_penalty": (number > 0, "positive"),
        }
        _check_range(key, value, *checks[key])
        out[key] = number
    return out


def engine_kwargs(backend_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The ``vllm.LLM`` keyword arguments (besides ``model``) for server-wide ``backend_kwargs``.

    Defaults from :data:`ENGINE_DEFAULTS`, overridden by the engine keys present; other
    keys are ignored. ``limit_mm_per_prompt`` is always :data:`MM_LIMITS`.
    """
    out = {**ENGINE_DEFAULTS, **{k: v for k, v in backend_kwargs.items() if k in ENGINE_KEYS}}
    for key in ("max_model_len", "tensor_parallel_size", "max_num_seqs"):
        if key in out:
            _check_range(key, out[key], _number(key, out[key], integer=True) >= 1, "at least 1")
    ratio = _number("gpu_memory_utilization", out["gpu_memory_utilization"])
    _check_range("gpu_memory_utilization", ratio, 0 < ratio <= 1, "in (0, 1]")
    for key in ("enforce_eager", "trust_remote_code"):
        if not isinstance(out[key], bool):
            raise TypeError(f"backend_kwargs[{key!r}] must be true or false, got {out[key]!r}.")
    if not isinstance(out["dtype"], str):
        raise TypeError(f"backend_kwargs['dtype'] must be a string such as 'auto' or 'bfloat16', got {out['dtype']!r}.")
    return {**out, "limit_mm_per_prompt": dict(MM_LIMITS)}


def _load_vision_inputs(messages: list[dict[str, Any]]) -> tuple[list[Any], list[tuple[Any, dict[str, Any]]]]:
    """Images (PIL) and videos ``(frames, metadata)`` of ``messages``, in message order.

    Private stand-in for the shared qwen-vl-utils helper; see the module docstring for
    what qwen-vl-utils returns.
    """
    try:
        from qwen_vl_utils import process_vision_info
    except ImportError as exc:
        raise ImportError(f"the vLLM backends need qwen-vl-utils>=0.0.14: {INSTALL_HINT}") from exc
    images, videos, _ = process_vision_info(messages, return_video_kwargs=True, return_video_metadata=True)
    return list(images or []), list(videos or [])


def sampled_fps(metadata: Mapping[str, Any]) -> float:
    """Frames per second of the *sampled* clip: what the temporal M-RoPE step is built from.

    Same formula as transformers 5's ``VideoMetadata.sampled_fps`` and qwen-vl-utils'
    ``sample_fps``, so old and new vLLM see the same timing.
    """
    return len(metadata["frames_indices"]) / max(metadata["total_num_frames"], 1e-6) * metadata["fps"]


def build_vllm_request(spec: PromptSpec, job: ScoreJob, processor: Any) -> dict[str, Any]:
    """One ``llm.generate`` prompt dict for ``job``: chat text, frames, processor kwargs.

    ``processor`` is anything with the Qwen2.5-VL chat template's ``apply_chat_template``
    (the HF processor, or its tokenizer). Reads the video (and, for the
    ``first_video_last`` layout, its first and last frame with OpenCV) from disk.
    """
    first_last = read_first_last_frames(job.video_path) if spec.frame_layout == "first_video_last" else None
    messages = build_messages(
        spec, job.task_text, job.video_path, nframes=job.nframes, max_pixels=job.max_pixels, first_last=first_last
    )
    prompt = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    images, videos = _load_vision_inputs(messages)
    mm_data: dict[str, Any] = {"video": videos}
    if images:
        mm_data["image"] = images
    return {
        "prompt": prompt,
        "multi_modal_data": mm_data,
        # One video per request, so a scalar fps (a per-video list fails transformers 5's
        # strict kwarg check).
        "mm_processor_kwargs": {"do_sample_frames": False, "fps": sampled_fps(videos[0][1])},
    }


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise ImportError(f"the vLLM backends need vLLM, which is not installed: {INSTALL_HINT}") from exc
    return vllm


@register_backend
class QwenVllmBackend(RewardBackend):
    """Qwen2.5-VL on vLLM; subclasses change only the class-level data below.

    ``default_preset`` names the prompt preset in :data:`vlm_reward.prompts.PRESETS`;
    ``sampling_defaults`` are the SamplingParams used unless ``backend_kwargs`` override them.
    """

    name = "qwen2_5_vl_vllm"
    default_preset: ClassVar[str] = "qwen"
    # Greedy: a reward should not change between two calls on the same episode.
    sampling_defaults: ClassVar[Mapping[str, Any]] = {"temperature": 0.0, "max_tokens": 256}

    def __init__(self, model: str, **backend_kwargs: Any) -> None:
        super().__init__(model, **backend_kwargs)
        check_backend_kwargs(backend_kwargs, per_request=False)
        self._engine_kwargs = engine_kwargs(backend_kwargs)
        self._sampling = {**self.sampling_defaults, **sampling_params_kwargs(backend_kwargs)}
        self._prompt = resolve_prompt(PRESETS[self.default_preset], backend_kwargs)
        self._vllm: Any = None
        self._llm: Any = None
        self._processor: Any = None

    def load(self) -> None:
        """Start the vLLM engine and load the processor whose chat template builds prompts."""
        vllm = _import_vllm()
        from transformers import AutoProcessor

        trust = self._engine_kwargs["trust_remote_code"]
        self._processor = AutoProcessor.from_pretrained(self.model, trust_remote_code=trust)
        self._llm = vllm.LLM(model=self.model, **self._engine_kwargs)
        self._vllm = vllm

    def job_settings(self, job: ScoreJob) -> tuple[PromptSpec, dict[str, Any]]:
        """The prompt and SamplingParams kwargs for ``job``: server settings plus its overrides."""
        overrides = job.backend_kwargs
        check_backend_kwargs(overrides, per_request=True)
        return resolve_prompt(self._prompt, overrides), {**self._sampling, **sampling_params_kwargs(overrides)}

    def generate(self, jobs: Sequence[ScoreJob]) -> list[str | Exception]:
        """One engine call for the whole batch, one SamplingParams per job.

        A job whose settings or video are bad gets its own exception and is left out of the
        engine call; an engine failure raises (the whole batch failed).
        """
        if self._llm is None:
            raise RuntimeError(f"backend {self.name!r} is not loaded; call load() first.")
        results: list[str | Exception] = [RuntimeError("no output")] * len(jobs)
        requests, params, slots = [], [], []
        for slot, job in enumerate(jobs):
            try:
                spec, sampling = self.job_settings(job)
                requests.append(build_vllm_request(spec, job, self._processor))
                params.append(self._vllm.SamplingParams(**sampling))
                slots.append(slot)
            except Exception as exc:  # one bad job must not fail its batch-mates
                results[slot] = exc
        if requests:
            outputs = self._llm.generate(requests, sampling_params=params, use_tqdm=False)
            for slot, output in zip(slots, outputs, strict=True):
                results[slot] = output.outputs[0].text
        return results

    def close(self) -> None:
        """Drop the engine so its GPU memory can be reclaimed."""
        self._llm = None
        self._processor = None
