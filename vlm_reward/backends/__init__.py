"""Backend registry. Importing this package registers the built-in backends.

Each built-in lives in its own module and imports its heavy dependencies only in
``load()``, so importing the registry stays cheap. A third-party backend registers
itself the same way: subclass :class:`RewardBackend`, decorate it with
:func:`register_backend`, and import its module before starting the server
(``--plugin my_pkg.my_backend``).
"""

from __future__ import annotations

from vlm_reward.backends.base import (
    RewardBackend,
    ScoreJob,
    available_backends,
    backend_aliases,
    canonical_name,
    register_backend,
    resolve_backend,
)

# Built-ins register on import; they are listed here so the registry is complete.
from vlm_reward.backends import qwen2_5_vl_hf, qwen2_5_vl_vllm, primo_r1_vllm  # noqa: E402,F401,I001

__all__ = [
    "RewardBackend",
    "ScoreJob",
    "available_backends",
    "backend_aliases",
    "canonical_name",
    "register_backend",
    "resolve_backend",
]
