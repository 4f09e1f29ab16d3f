"""What the vLLM backends ask of vLLM: the engine's settings and each request's SamplingParams.

Plain functions over ``backend_kwargs``, validated here so a bad value fails as a 4xx (or
at the command line) before it reaches the engine, and testable without vLLM. The ranges
are vLLM's own (temperature in [0, 2], top_p in (0, 1], top_k >= -1, max_tokens >= 1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from vlm_reward.judging.prompts import PROMPT_OVERRIDE_KEYS

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
    (
        "temperature",
        "top_p",
        "top_k",
        "max_tokens",
        "max_new_tokens",
        "seed",
        "repetition_penalty",
        "stop",
        "do_sample",
    )
)
REQUEST_KEYS = SAMPLING_KEYS | frozenset(PROMPT_OVERRIDE_KEYS)
# vLLM checks every stop string after each token; a short list keeps that cost fixed.
MAX_STOP_SEQUENCES = 16
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
        raise TypeError(
            f"backend_kwargs['stop'] must be a string or a list of non-empty strings, got {value!r}."
        )
    if len(stops) > MAX_STOP_SEQUENCES:
        raise ValueError(
            f"backend_kwargs['stop'] has {len(stops)} strings; at most {MAX_STOP_SEQUENCES} are accepted."
        )
    return list(stops)


def _apply_do_sample(given: dict[str, Any]) -> None:
    """Replace the HF-style ``do_sample`` in ``given`` by the temperature it means in vLLM.

    Same reading as the HF backend: false is greedy whatever the temperature; true samples,
    so a temperature of 0 contradicts it, and none given means transformers' default of 1.
    """
    if "do_sample" not in given:
        return
    do_sample = given.pop("do_sample")
    if not isinstance(do_sample, bool):
        raise TypeError(f"backend_kwargs['do_sample'] must be true or false, got {do_sample!r}.")
    if not do_sample:
        given["temperature"] = 0.0
    elif given.setdefault("temperature", 1.0) == 0:
        raise ValueError(
            "backend_kwargs['do_sample'] is true but temperature is 0; use a positive temperature."
        )


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
    _apply_do_sample(given)
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
        raise TypeError(
            f"backend_kwargs['dtype'] must be a string such as 'auto' or 'bfloat16', got {out['dtype']!r}."
        )
    return {**out, "limit_mm_per_prompt": dict(MM_LIMITS)}
