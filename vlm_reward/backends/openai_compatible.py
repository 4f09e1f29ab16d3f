"""Forward judgements to an OpenAI-compatible server: ``vllm serve``, SGLang, Ray Serve LLM.

Scaling a judge is what those servers do well (data parallel replicas behind one router,
tensor parallel, their own schedulers), so this backend does not load a model: it keeps
what makes a reward (the prompt, the frames, reading the answer) and sends the chat
request upstream. The server's ``--model`` is the checkpoint (a local path or hub id whose
processor is loaded here, for the chat template and the answer tokens); ``served_model_name``
is what the upstream calls it (default: the same string, as ``vllm serve PATH`` names it).

The frames are pinned. The clip the reward server decoded is resized here exactly as the
in-process backends resize it and encoded as an MP4 of just those frames at their sampled
rate, so an upstream that reads every frame of it sees what the in-process backends show.
vLLM's OpenAI server does not by default: its loader samples at 2 fps and marks the clip
for its processor to resample (and per-request loader settings are refused unless it runs
with ``--trust-request-mm-kwargs``). Start it with :data:`VLLM_SERVE_MEDIA_IO_KWARGS`, the
Qwen2-VL loader at up to 30 fps, which keeps every frame of a clip of 30 fps or less and
hands them on unresampled. Then it is checked: the prompt length the upstream reports
(``usage.prompt_tokens``) must be the one the pinned frames make, counted here by the
checkpoint's own processor on the same prompt and pixels (so each family's geometry and
Qwen3-VL's frame timestamps count as they do in the model); a mismatch is an error naming
both numbers.

The checkpoint may be of any family of :mod:`vlm_reward.judging.model_family` (Qwen2.5-VL,
Qwen3-VL): its ``config.json`` (read at start-up for a local path) picks the pixel size
frames and images are resized to.

Score modes as in the Qwen backends: "probability" asks for the log-probabilities of the
answer tokens (``logprobs`` with vLLM's ``logprob_token_ids``, tokens returned as ids);
text modes read ``choices[0].message.content``. Cancelling a job closes its HTTP request,
which vLLM's server turns into an abort.

Server-wide ``backend_kwargs``: ``base_url`` (required, e.g. ``http://gpu-box:8000/v1``),
``served_model_name``, ``timeout`` (seconds, 600), ``check_prompt_tokens`` (true). The
upstream's key comes from ``$OPENAI_API_KEY`` only: a literal ``api_key`` here is refused, since
``--backend-kwargs`` shows in ``ps`` and is copied into an evaluation's ``settings.json``.
Sampling and prompt keys as :mod:`vlm_reward.backends.vllm_settings` documents, server-wide
or per request.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import tempfile
from collections.abc import Mapping
from typing import Any, ClassVar

from vlm_reward.backends.answer_tokens import (
    ScaleTokens,
    answer_tokens_or_error,
    probability_answer,
    require_answer_tokens,
)
from vlm_reward.backends.async_base import AsyncRewardBackend
from vlm_reward.backends.base import ProbabilityAnswer, ScoreJob, register_backend
from vlm_reward.backends.checkpoint_family import FamilyCheckpoint
from vlm_reward.backends.qwen_vision import (
    VisionInputs,
    job_clip,
    job_messages,
    load_vision_inputs,
    qwen_frame_indices,
)
from vlm_reward.backends.vllm_settings import REQUEST_KEYS, sampling_params_kwargs
from vlm_reward.judging.model_family import ModelFamily
from vlm_reward.judging.probability import AnswerTokens
from vlm_reward.judging.prompts import ServerPrompts
from vlm_reward.protocol import TEXT_SCORE_MODES, authorization

CONNECTION_KEYS = ("base_url", "served_model_name", "api_key", "timeout", "check_prompt_tokens")
# `vllm serve ... --media-io-kwargs '<this>'`: every frame of the pinned clip, not resampled.
VLLM_SERVE_MEDIA_IO_KWARGS = '{"video": {"video_backend": "qwen2_vl", "fps": 30}}'
# `vllm serve ... --mm-processor-kwargs '<this>'` as well, for Qwen3-VL: vLLM 0.32 reads a
# Qwen3-VL clip with its own loader, which marks a clip it read whole as "sample again" for
# the HF processor (at 2 fps); per-request processor kwargs are refused by default.
VLLM_SERVE_MM_PROCESSOR_KWARGS = '{"do_sample_frames": false}'
logger = logging.getLogger(__name__)


def check_kwargs(kwargs: Mapping[str, Any], *, per_request: bool) -> None:
    """``ValueError`` naming the valid keys for an unknown one (connection keys: server-wide only)."""
    allowed = set(REQUEST_KEYS) if per_request else {*REQUEST_KEYS, *CONNECTION_KEYS}
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        where = "per request" if per_request else "for this backend"
        raise ValueError(
            f"unknown backend_kwargs {', '.join(map(repr, unknown))} for openai_compatible; "
            f"valid keys {where}: {', '.join(sorted(allowed))}."
        )
    if not per_request and not isinstance(kwargs.get("base_url"), str):
        raise ValueError(
            "openai_compatible needs backend_kwargs['base_url'], e.g. 'http://127.0.0.1:8000/v1'."
        )


def expected_prompt_tokens(processor: Any, text: str, vision: VisionInputs) -> int:
    """The prompt length of ``text`` with each vision placeholder expanded by the checkpoint's
    processor for these pixels (what the in-process transformers backend feeds the model)."""
    from vlm_reward.backends.qwen_vl_hf import processor_inputs

    return int(processor_inputs(processor, [text], [vision])["input_ids"].shape[1])


def accepted_prompt_tokens(expected: int, vision: VisionInputs, family: ModelFamily) -> tuple[int, ...]:
    """The prompt lengths an upstream that saw exactly these frames may report.

    ``expected`` is this process's count (transformers 4.57 here); an upstream on
    transformers >= 5.10 keeps ``family.kept_video_wrap_tokens`` more per video (Qwen3-VL:
    the outer vision start/end pair), which says nothing about the frames it saw.
    """
    extra = family.kept_video_wrap_tokens * len(vision.videos)
    return (expected, expected + extra) if extra else (expected,)


def _data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _video_bytes(video: Any, fps: float) -> bytes:
    """The resized frames (float ``(T, C, H, W)``) as MP4 bytes at ``fps``."""
    from vlm_reward.video_io import encode_mp4

    frames = video.round().clamp(0, 255).byte().permute(0, 2, 3, 1).numpy()
    with tempfile.TemporaryDirectory(prefix="vlm-reward-openai-") as tmp:
        path = os.path.join(tmp, "clip.mp4")
        encode_mp4(frames, path, fps=fps)
        with open(path, "rb") as f:
            return f.read()


def _image_bytes(image: Any) -> bytes:
    import io

    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def openai_messages(messages: list[dict[str, Any]], vision: VisionInputs) -> list[dict[str, Any]]:
    """``messages`` in the OpenAI chat format, the pixels inline as data URLs, in order."""
    images, fps = iter(vision.images), vision.video_kwargs.get("fps", [])
    videos = iter(zip(vision.videos, fps, strict=True))
    converted = []
    for message in messages:
        content = []
        for item in message["content"]:
            if item.get("type") == "video":
                video, rate = next(videos)
                url = _data_url("video/mp4", _video_bytes(video, rate))
                content.append({"type": "video_url", "video_url": {"url": url}})
            elif item.get("type") == "image":
                url = _data_url("image/png", _image_bytes(next(images)))
                content.append({"type": "image_url", "image_url": {"url": url}})
            else:
                content.append({"type": "text", "text": item["text"]})
        converted.append({"role": message["role"], "content": content})
    return converted


def answer_logprobs(choice: Mapping[str, Any]) -> dict[int, float]:
    """Token id -> log-probability at the first answer position, from a choice with token ids."""
    [first] = choice["logprobs"]["content"][:1]
    return {
        int(entry["token"].removeprefix("token_id:")): entry["logprob"] for entry in first["top_logprobs"]
    }


@register_backend
class OpenAICompatibleBackend(FamilyCheckpoint, AsyncRewardBackend):
    """A Qwen-VL judge behind an OpenAI-compatible server (see the module docstring)."""

    name = "openai_compatible"
    judge_kind = "video VLM"
    default_preset: ClassVar[str] = "qwen"
    default_score_mode = "probability"
    score_modes = (*TEXT_SCORE_MODES, "probability")
    sampling_defaults: ClassVar[Mapping[str, Any]] = {"temperature": 0.0, "max_tokens": 256}

    def __init__(self, model: str, **backend_kwargs: Any) -> None:
        super().__init__(model, **backend_kwargs)
        if "api_key" in backend_kwargs:
            raise ValueError(
                "backend_kwargs 'api_key' is refused: --backend-kwargs shows in ps and is saved in an "
                "evaluation's settings.json; export OPENAI_API_KEY for the reward server instead."
            )
        check_kwargs(backend_kwargs, per_request=False)
        self.base_url = backend_kwargs["base_url"].rstrip("/")
        self.served_model_name = backend_kwargs.get("served_model_name", model)
        self.timeout = float(backend_kwargs.get("timeout", 600.0))
        self.check_prompt_tokens = bool(backend_kwargs.get("check_prompt_tokens", True))
        self._api_key = os.environ.get("OPENAI_API_KEY")
        sampling_keys = {k: v for k, v in backend_kwargs.items() if k not in CONNECTION_KEYS}
        self._sampling = {**self.sampling_defaults, **sampling_params_kwargs(sampling_keys)}
        self.prompts = ServerPrompts(self.default_preset, sampling_keys)
        self._client: Any = None
        self._processor: Any = None
        self._answer_tokens: ScaleTokens | None = None

    async def load_async(self) -> None:
        """Load the processor, open the connection pool, and check the upstream serves the model."""
        import httpx
        from transformers import AutoProcessor

        self.resolve_family()
        self._processor = AutoProcessor.from_pretrained(self.model)
        self._answer_tokens = answer_tokens_or_error(self._processor.tokenizer)
        headers = {"Authorization": authorization(self._api_key)} if self._api_key else {}
        self._client = httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=self.timeout)
        response = await self._client.get("/models")
        response.raise_for_status()
        served = [entry["id"] for entry in response.json().get("data", [])]
        if self.served_model_name not in served:
            raise ValueError(
                f"the upstream at {self.base_url} serves {served}, not {self.served_model_name!r}; "
                "set backend_kwargs['served_model_name']."
            )

    def frame_indices(self, total_frames: int, nframes: int) -> list[int]:
        """The frames the in-process Qwen backends would show (qwen-vl-utils' sampling)."""
        return qwen_frame_indices(total_frames, nframes)

    def token_budget(self, backend_kwargs: Mapping[str, Any]) -> int:
        """``max_tokens`` of a request with these ``backend_kwargs``."""
        check_kwargs(backend_kwargs, per_request=True)
        return int({**self._sampling, **sampling_params_kwargs(backend_kwargs)}["max_tokens"])

    def request_body(self, job: ScoreJob) -> tuple[dict[str, Any], tuple[int, ...]]:
        """The chat request for ``job`` and the prompt lengths the upstream may report
        (:func:`accepted_prompt_tokens`; the first is this process's own count).

        In probability mode a preset with an answer prefix ("ANSWER: ") sends it as the start
        of the assistant's turn, continued by the upstream (vLLM's ``continue_final_message``).
        """
        check_kwargs(job.backend_kwargs, per_request=True)
        mode = job.score_mode or self.default_score_mode
        spec = self.prompts.for_job(mode, job.backend_kwargs)
        family = self.require_family()
        clip = job_clip(job)
        messages = job_messages(spec, job, clip)
        vision = load_vision_inputs(messages, clip, family, job.native_frame_size)
        text = self._processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        body: dict[str, Any] = {
            "model": self.served_model_name,
            "messages": openai_messages(messages, vision),
            **{**self._sampling, **sampling_params_kwargs(job.backend_kwargs)},
        }
        if mode == "probability":
            tokens = require_answer_tokens(self._answer_tokens, spec.answer_scale, self.name)
            body.update(max_tokens=1, temperature=0.0, logprobs=True, return_tokens_as_token_ids=True)
            body["logprob_token_ids"] = tokens.ids
            if spec.answer_prefix:
                body["messages"].append({"role": "assistant", "content": spec.answer_prefix})
                body.update(continue_final_message=True, add_generation_prompt=False)
                text += spec.answer_prefix
        expected = expected_prompt_tokens(self._processor, text, vision)
        return body, accepted_prompt_tokens(expected, vision, family)

    def _answer_tokens_of(self, job: ScoreJob) -> AnswerTokens:
        spec = self.prompts.for_job(job.score_mode or self.default_score_mode, job.backend_kwargs)
        return require_answer_tokens(self._answer_tokens, spec.answer_scale, self.name)

    async def generate_one(self, job: ScoreJob) -> str | ProbabilityAnswer:
        """One chat request upstream; cancelling this coroutine closes it (vLLM then aborts)."""
        if self._client is None:
            raise RuntimeError(f"backend {self.name!r} is not loaded; call load() first.")
        body, accepted = await asyncio.to_thread(self.request_body, job)
        response = await self._client.post("/chat/completions", json=body)
        if response.status_code != 200:
            raise RuntimeError(f"the upstream answered {response.status_code}: {response.text[:500]}")
        reply = response.json()
        usage = reply.get("usage") or {}
        reported = usage.get("prompt_tokens")
        job.usage.record(reported or 0, usage.get("completion_tokens") or 0)
        if self.check_prompt_tokens and reported not in accepted:
            raise RuntimeError(
                f"the upstream's prompt has {reported} tokens, the pinned frames make "
                f"{' or '.join(map(str, accepted))}: it did "
                "not see the frames sent (a resampled video?); start vllm serve with "
                f"--media-io-kwargs '{VLLM_SERVE_MEDIA_IO_KWARGS}' (and, for Qwen3-VL, "
                f"--mm-processor-kwargs '{VLLM_SERVE_MM_PROCESSOR_KWARGS}')."
            )
        logger.info("upstream prompt_tokens=%s", reported)
        choice = reply["choices"][0]
        if "logprob_token_ids" in body:
            return probability_answer(answer_logprobs(choice), self._answer_tokens_of(job))
        return choice["message"]["content"] or ""

    async def close_async(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            await self._client.aclose()
        self._client = None
