"""What the reward server is started with: the validated command line, as one frozen value.

Each field that is a flag declares it (:mod:`vlm_reward.settings_flags`): its default is the
flag's default, written nowhere else. Three fields are not flags: ``limits`` and ``self_test``
are settings classes of their own (their fields are the ``--max-*`` and ``--self-test*``
flags), and ``api_keys`` is read from ``$VLM_REWARD_API_KEY`` or ``--api-key-file``
(:mod:`vlm_reward.server.launch`), never from a flag.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

from vlm_reward.argtypes import float_at_least, json_object, positive_int
from vlm_reward.backends.qwen_vl_vllm import QwenVllmBackend
from vlm_reward.server.limits import RequestLimits
from vlm_reward.server.self_test import SelfTestSettings
from vlm_reward.settings_flags import flag

# The JSON around a video (task text, kwargs) is small; 1 MiB of slack on top of the
# base64-inflated video limit keeps the body limit from rejecting what the video limit allows.
_BODY_SLACK_BYTES = 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class ServerConfig:
    """Everything the server is started with (the CLI flags, validated)."""

    # The serving default: vLLM on a GPU (the CPU tools name qwen_vl_hf themselves).
    backend: str = flag(QwenVllmBackend.name, help="backend name or alias (see GET /backends)")
    model: str = flag(help="model path or id passed to the backend")
    backend_kwargs: dict[str, Any] = flag(
        default_factory=dict, parse=json_object, help="JSON object for the backend"
    )
    video_root: str = flag(
        default_factory=tempfile.gettempdir,
        help="video_path must resolve inside this directory (default: %(default)s)",
    )
    max_batch_size: int = flag(8, parse=positive_int, help="jobs per generate call")
    max_wait_ms: float = flag(
        20.0,
        parse=float_at_least(0, strict=False),
        help="how long a batch waits for requests already on their way (a lone request never waits)",
    )
    limits: RequestLimits = field(default_factory=RequestLimits)
    # Access and admission (see vlm_reward.server.auth, docs/server/security.md and
    # docs/server/operations.md):
    api_keys: Any = None  # an ApiKeys (its repr hides the keys), or None: no key needed
    metrics: bool = flag(True, help="no GET /metrics, and no counting behind it")
    metrics_public: bool = flag(False, help="serve GET /metrics without a key")
    # None (unbounded, no deadline) is for callers in Python; the flags take positive numbers.
    max_inflight_mb: float | None = flag(
        64.0,
        parse=float_at_least(0, strict=True),
        help="megabytes of request bodies held at once (a body takes about 4 times its size while "
        "it is parsed and decoded); past it 503 server_busy (default: %(default)s)",
    )
    body_timeout_s: float | None = flag(
        60.0,
        name="body-timeout",
        parse=float_at_least(0, strict=True),
        help="seconds a request may take to send its whole body; then 408 (default: %(default)s)",
    )
    self_test: SelfTestSettings | None = None  # --self-test: labelled episodes judged before serving

    @property
    def max_body_bytes(self) -> int:
        """Largest request body: the video limit after base64 (4/3) plus JSON slack."""
        return int(self.limits.max_video_mb * 1024 * 1024 * 4 / 3) + _BODY_SLACK_BYTES

    @property
    def max_inflight_bytes(self) -> int | None:
        """The budget of request-body bytes in flight, never below one largest body."""
        if self.max_inflight_mb is None:
            return None
        return max(int(self.max_inflight_mb * 1024 * 1024), self.max_body_bytes)


def model_display_name(model: str) -> str:
    """What responses call the model: a local checkpoint's directory name, else the id as given.

    Responses must not reveal host paths, and the directory name is what people call it.
    """
    if os.path.isabs(model):
        return os.path.basename(os.path.normpath(model)) or model
    return model
