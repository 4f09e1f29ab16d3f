"""argparse ``type=`` parsers shared by the server's command line and the evaluation commands.

Each turns one flag's text into a value or raises ``argparse.ArgumentTypeError`` with a
sentence naming the bad value, which argparse prints after the flag's name.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from typing import Any


def positive_int(text: str) -> int:
    """An integer >= 1."""
    return _int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """An integer >= 0."""
    return _int_at_least(text, 0)


def _int_at_least(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
    return value


def port(text: str) -> int:
    """A TCP port, 1..65535."""
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"expected a port in 1..65535, got {text!r}")
    return value


def float_at_least(minimum: float, strict: bool = False) -> Callable[[str], float]:
    """A finite float ``>= minimum`` (``> minimum`` when ``strict``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (value > minimum if strict else value >= minimum) or math.isinf(value):
            bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
            raise argparse.ArgumentTypeError(f"expected a finite number {bound}, got {text!r}")
        return value

    return parse


def unit_interval(text: str) -> float:
    """A float in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {value}")
    return value


def json_object(text: str) -> dict[str, Any]:
    """A JSON object, e.g. ``'{"max_new_tokens": 64}'``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc.msg}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object like '{{\"key\": 1}}', got {text!r}")
    return value
