"""RLinf's API reward worker's request shape, re-created here from its documented behaviour.

Written from the facts issue 39 states about RLinf main's ``api_reward_worker.py`` and
``http_client.py`` (no code of RLinf is copied or imported), so the side-by-side benchmark
(:mod:`benchmarks.bench_rlinf_reward_shape`) can send what that worker sends to the same engine:

- one OpenAI ``POST /v1/chat/completions`` per env per chunk step (its history-buffer mode);
- one user message: every frame as its own ``image_url`` data URL, JPEG at quality 95, view-major
  (all frames of the first view, then the second's), then the text prompt;
- RLinf's only shipped API-reward example asks for 5 frames of each of 2 views, ``max_tokens``
  16, temperature 0;
- sent by a new thread per request (a pool as large as the batch), a bare ``requests.post``
  without a session, one attempt, 120 s to connect and no read deadline; the env waits for the
  rewards at every chunk step;
- the answer's ``positive`` / ``negative`` / ``unclear`` / anything else read as 1.0 / -0.2 / 0 / 0.

Which frames the history buffer holds is not among those facts: here, the latest
``frames_per_view`` observations of each view (the first ones repeated while the buffer fills).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

# The answer words and the rewards they map to; any other answer is invalid and maps to INVALID.
REWARDS: Mapping[str, float] = {"positive": 1.0, "negative": -0.2, "unclear": 0.0}
INVALID = 0.0


@dataclass(frozen=True)
class PeerShape:
    """The request shape's settings (RLinf's example's values by default)."""

    views: tuple[str, ...] = ("main_images", "wrist_images")
    frames_per_view: int = 5
    jpeg_quality: int = 95
    max_tokens: int = 16
    temperature: float = 0.0
    connect_timeout_s: float = 120.0
    read_timeout_s: float | None = None  # no read deadline


def jpeg_data_url(frame: np.ndarray, quality: int) -> str:
    """One ``(H, W, 3)`` uint8 frame as a ``data:image/jpeg;base64,...`` URL."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(frame).save(buffer, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def history(frames: Sequence[np.ndarray], count: int) -> list[np.ndarray]:
    """The latest ``count`` frames of a view's history, the first repeated while it holds fewer;
    ``ValueError`` for an empty history."""
    if not frames:
        raise ValueError("a view's history holds no frame yet.")
    latest = list(frames[-count:])
    return [latest[0]] * (count - len(latest)) + latest


def payload(
    model: str, prompt: str, views: Mapping[str, Sequence[np.ndarray]], shape: PeerShape
) -> dict[str, Any]:
    """The chat request for one env at one chunk step: view-major JPEG data URLs, then the prompt.

    ``views`` maps each of ``shape.views`` to that view's history so far (oldest first);
    ``ValueError`` naming a view the shape needs and ``views`` lacks.
    """
    missing = [view for view in shape.views if view not in views]
    if missing:
        raise ValueError(f"no frames for the view(s) {missing}; the shape needs {list(shape.views)}.")
    content: list[dict[str, Any]] = [
        {"type": "image_url", "image_url": {"url": jpeg_data_url(frame, shape.jpeg_quality)}}
        for view in shape.views
        for frame in history(views[view], shape.frames_per_view)
    ]
    content.append({"type": "text", "text": prompt})
    return {
        "model": model,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": shape.max_tokens,
        "temperature": shape.temperature,
    }


def reward_of(answer: str | None) -> float:
    """The reward RLinf's worker reads from an answer (see the module docstring)."""
    return REWARDS.get((answer or "").strip().lower(), INVALID)


def post_all(url: str, payloads: Sequence[dict[str, Any]], shape: PeerShape) -> list[dict[str, Any] | None]:
    """Send every payload at once as the worker does: one new thread each, a bare ``requests.post``
    (no session, one attempt); a failed request answers ``None`` (its reward is then invalid)."""
    import requests

    def post(body: dict[str, Any]) -> dict[str, Any] | None:
        try:
            response = requests.post(url, json=body, timeout=(shape.connect_timeout_s, shape.read_timeout_s))
            response.raise_for_status()
            return response.json()
        except (requests.RequestException, ValueError):
            return None

    if not payloads:
        return []
    with ThreadPoolExecutor(max_workers=len(payloads)) as pool:
        return list(pool.map(post, payloads))
