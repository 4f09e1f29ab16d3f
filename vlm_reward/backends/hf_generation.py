"""Decoding settings of the transformers backend, their checks, and its torch-side helpers.

Which ``backend_kwargs`` it takes, their validation, the ``model.generate`` arguments they mean.

Plain functions and one dataclass, so what a request asks of ``generate`` is tested
without loading a model. torch and transformers are imported only inside the helpers that
need them.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vlm_reward.backends.base import ScoreJob
from vlm_reward.judging.prompts import PROMPT_OVERRIDE_KEYS

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
        f"unknown backend_kwargs {', '.join(map(repr, unknown))} for qwen_vl_hf{hint}; "
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


def import_torch_transformers() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ImportError(f"the qwen_vl_hf backend needs torch and transformers: {INSTALL_HINT}") from exc
    return torch, transformers


def limit_cpu_threads(torch: Any) -> None:
    """Never use more intra-op threads than CPUs this process may run on.

    torch defaults to the machine's physical cores, which in a container or under
    ``taskset`` can exceed the CPUs actually granted and then oversubscribes them.
    """
    granted = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if torch.get_num_threads() > granted:
        torch.set_num_threads(granted)


def torch_dtype(torch: Any, dtype: str, device: str) -> Any:
    """The ``from_pretrained`` dtype for a ``dtype`` setting (see the module docstring)."""
    if dtype == "auto":
        # Half precision on CPU is slow and partly unsupported; elsewhere keep the checkpoint's.
        return torch.float32 if device == "cpu" else "auto"
    return getattr(torch, dtype)
