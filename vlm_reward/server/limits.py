"""Server-side caps on what one ``POST /score`` may cost (the server's ``--max-*`` flags).

A reward server is shared by every env worker of a training run, so one buggy or hostile
request must not be able to occupy it for everybody: a generation budget of a billion
tokens, thousands of frames, a 4K frame size or a megabyte prompt would each do. Every
request field that scales the work has a cap here, one field of :class:`RequestLimits`
per ``--max-*`` flag (the CLI builds its flags from these fields with
:mod:`vlm_reward.settings_flags`, so name, default and help are defined once).

A request above a cap is refused with 422 ``limit_exceeded`` naming the field, the value,
the cap and its flag. Nothing is clamped silently: a judge that quietly saw fewer frames or
wrote a shorter answer than the client asked for would give a different reward.

Pure logic (no I/O), so its tests run in milliseconds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from vlm_reward.argtypes import float_at_least, positive_int
from vlm_reward.errors import LimitExceededError
from vlm_reward.settings_flags import flag


def _cap(default: float, help_text: str) -> Any:
    """A cap's field and its ``--max-*`` flag: a positive whole number or a positive number,
    as its default is; ``--help`` shows the default."""
    parse = positive_int if isinstance(default, int) else float_at_least(0, strict=True)
    return flag(default, help=f"{help_text} (default: %(default)s)", parse=parse)


@dataclass(frozen=True)
class RequestLimits:
    """The caps; defaults fit Qwen2.5-VL-7B / PRIMO-R1 with ``max_model_len`` 16384.

    ``max_video_pixels`` bounds ``nframes * max_pixels``, which is what the vision tower's
    cost scales with (about one token per 784 pixels per two frames): the default is 64
    frames at the env's 200704 pixels, 8192 video tokens, which leaves room for a
    4096-token PRIMO-R1 answer in a 16384-token context.
    """

    max_new_tokens: int = _cap(
        4096,
        "most tokens one request may generate (its backend_kwargs max_new_tokens / max_tokens, or the "
        "backend's default); PRIMO-R1's reasoning needs up to 4096",
    )
    max_nframes: int = _cap(64, "most frames one request may ask the VLM to sample (nframes)")
    max_pixels: int = _cap(1003520, "largest per-frame pixel budget a request may ask for (max_pixels)")
    max_video_pixels: int = _cap(12845056, "largest nframes * max_pixels of one request")
    max_prompt_chars: int = _cap(
        8192,
        "longest task_text, and longest string in backend_kwargs (system_prompt, question_template, "
        "stop strings)",
    )
    max_video_frames: int = _cap(
        4096, "most frames a video may hold (the server decodes the whole file to check it)"
    )
    max_video_mb: float = _cap(32.0, "largest video accepted, inline (before base64) or by path")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"--{flag_name(f.name)} must be a positive number, got {value!r}.")

    def as_dict(self) -> dict[str, int | float]:
        """The caps by field name (``GET /health`` reports them, so clients can check first)."""
        return dataclasses.asdict(self)

    def check_request(
        self, *, nframes: int, max_pixels: int, task_text: str, backend_kwargs: Mapping[str, Any]
    ) -> None:
        """Raise :class:`LimitExceededError` for the first request field above its cap."""
        _check("nframes", nframes, self.max_nframes, "max_nframes")
        _check("max_pixels", max_pixels, self.max_pixels, "max_pixels")
        _check("nframes * max_pixels", nframes * max_pixels, self.max_video_pixels, "max_video_pixels")
        _check("task_text length", len(task_text), self.max_prompt_chars, "max_prompt_chars", unit=" chars")
        for where, text in _strings(backend_kwargs, "backend_kwargs"):
            _check(f"{where} length", len(text), self.max_prompt_chars, "max_prompt_chars", unit=" chars")

    def check_token_budget(self, budget: int | None, where: str = "the request's generation budget") -> None:
        """Raise :class:`LimitExceededError` if ``budget`` new tokens exceed ``max_new_tokens``.

        ``None`` (a backend that cannot tell) passes: the server logs at start-up that the
        cap is not enforced for that backend.
        """
        if budget is not None:
            _check(where, budget, self.max_new_tokens, "max_new_tokens", unit=" tokens")

    def check_video_frames(self, frames: int) -> None:
        """Raise :class:`LimitExceededError` for a video with more than ``max_video_frames`` frames."""
        _check("the video's frame count", frames, self.max_video_frames, "max_video_frames")


def flag_name(field_name: str) -> str:
    """The command-line flag of a :class:`RequestLimits` field, without the dashes in front."""
    return field_name.replace("_", "-")


def _check(what: str, value: float, cap: float, field_name: str, unit: str = "") -> None:
    if value > cap:
        flag = flag_name(field_name)
        raise LimitExceededError(
            f"{what} is {_number(value)}{unit}, above this server's limit of {_number(cap)}{unit} "
            f"(--{flag}); ask for less, or start the server with a larger --{flag}."
        )


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every string inside a JSON value, with where it sits (``backend_kwargs['stop'][0]``)."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key, f"{where} key")
            yield from _strings(item, f"{where}[{key!r}]")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}[{i}]")
