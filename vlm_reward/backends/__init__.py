"""The backends, one module each, registered by name; importing this package registers the built-ins.

Each built-in lives in its own module and imports its heavy dependencies only in
``load()``, so importing the registry stays cheap. A third-party backend registers
itself the same way: subclass :class:`RewardBackend`, decorate it with
:func:`register_backend`, and import its module before starting the server
(``--plugin my_pkg.my_backend``).
"""

from __future__ import annotations

from vlm_reward.backends.base import (
    JobCancelledError,
    ProbabilityAnswer,
    RewardBackend,
    ScoreJob,
    TokenUsage,
    available_backends,
    backend_aliases,
    canonical_name,
    register_backend,
    resolve_backend,
)

# isort: split
# Built-ins register on import, after the names above that they use.
from vlm_reward.backends import openai_compatible, primo_r1_vllm, qwen_vl_hf, qwen_vl_vllm, resnet  # noqa: F401

__all__ = [
    "JobCancelledError",
    "ProbabilityAnswer",
    "RewardBackend",
    "ScoreJob",
    "TokenUsage",
    "available_backends",
    "backend_aliases",
    "canonical_name",
    "register_backend",
    "resolve_backend",
]
