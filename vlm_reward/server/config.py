"""What the reward server is started with: the validated command line, as one frozen value."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

from vlm_reward.server.limits import RequestLimits
from vlm_reward.server.self_test import SelfTestSettings

# The JSON around a video (task text, kwargs) is small; 1 MiB of slack on top of the
# base64-inflated video limit keeps the body limit from rejecting what the video limit allows.
_BODY_SLACK_BYTES = 1024 * 1024


@dataclass(frozen=True)
class ServerConfig:
    """Everything the server is started with (the CLI flags, validated)."""

    backend: str
    model: str
    backend_kwargs: dict[str, Any] = field(default_factory=dict)
    video_root: str = field(default_factory=tempfile.gettempdir)
    max_batch_size: int = 8
    max_wait_ms: float = 20.0
    limits: RequestLimits = field(default_factory=RequestLimits)
    # Access and admission (see vlm_reward.server.auth, docs/server/security.md and
    # docs/server/operations.md):
    api_keys: Any = None  # an ApiKeys (its repr hides the keys), or None: no key needed
    metrics: bool = True  # GET /metrics and the counting behind it (--no-metrics: off)
    metrics_public: bool = False  # GET /metrics without a key
    max_inflight_mb: float | None = 64.0  # request bodies in memory at once; None: unbounded
    body_timeout_s: float | None = 60.0  # deadline for a request's whole body; None: none
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
