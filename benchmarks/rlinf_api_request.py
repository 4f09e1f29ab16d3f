"""RLinf's API reward worker re-created: when it asks its judge, and what one request carries.

Written from reading RLinf main at commit a3816b5 (nothing of RLinf is copied or imported), so
benchmark 14 (:mod:`benchmarks.bench_rlinf_reward_shape`) can send what that worker would send
to the same engine as this project's server. The facts, and where they were read:

- **One history entry per chunk end** (``rlinf/workers/env/env_worker.py``,
  ``get_reward_model_output``): in ``reward_mode: history_buffer`` the env worker appends each
  env's observation after every chunk step to its history, builds the history input, and waits
  for the rewards before the next chunk.
- **When a buffer is due** (``rlinf/utils/env_helpers/history_manager.py``,
  ``build_history_input``), per env, after the append: while the env holds fewer than
  ``min_history_size`` entries, it gives an empty window; else, when its entry count since the
  last done is a multiple of ``input_interval``, the newest ``history_size`` entries; else, when
  the env is done and ``input_on_done``, the entries since the last interval tick; else nothing
  at all. Then a done env's history is cleared, any other env's cut to its newest
  ``history_size``. :func:`schedule` follows these rules for one env.
- **Which envs are asked** (``rlinf/models/embodiment/reward/vlm_reward_utils/input_builder.py``,
  ``get_valid_input_ids``): those with a non-empty window in every buffer, one request each;
  the others get ``interval_reward``.
- **A chunk where no env is due breaks the worker.** The history input is then ``{}``, and
  ``api_reward_worker.py`` ``compute_reward`` (like ``vlm_reward_model.py``'s) takes the batch
  size from its first entry without a guard: ``StopIteration``, raised inside the async
  ``compute_rewards`` loop, is a ``RuntimeError: coroutine raised StopIteration`` there. The
  empty window below ``min_history_size`` keeps the input non-empty, and with
  ``input_interval: 1`` every env is due at every chunk past it; any ``input_interval`` above 1
  reaches a chunk where no env is due (unless one is done with ``input_on_done``), so RLinf
  main cannot run that mode today. :func:`schedule` marks those chunks (``Tick.input_given``).
- **Done stays done without auto-reset.** With ``auto_reset: False`` (RLinf's LIBERO train
  default) a LIBERO env that succeeded keeps reporting termination while the success holds, and
  its history is cleared at every chunk it reports done: with ``min_history_size`` at most 1,
  ``input_on_done`` asks again at every later chunk, with that chunk's end alone; above 1 the
  history never refills and the env is not asked again.
- **The request** (``rlinf/workers/reward/api_reward_worker.py``, ``_build_chat_payloads``): one
  user message, every frame of every view of the window as its own ``image_url`` JPEG data URL
  at quality 95, view-major (each view's frames oldest first, in the order of
  ``input_builder_params.video_keys``), then the prompt; the body adds the configured
  ``reward.api.sampling_params``.
- **The transport** (``rlinf/utils/http_client.py``, ``InferenceHTTPClient.post``; the worker's
  ``_generate``): one new thread per request (a pool as large as the batch), a bare
  ``requests.post`` without a session or proxies, one attempt, 120 s to connect and no read
  deadline. A failed or non-2xx request raises ``RuntimeError``, which nothing in the worker
  catches: the whole chunk's reward call fails, not one env's reward.
- **RLinf's one shipped API-reward example**
  (``examples/embodiment/config/maniskill_ppo_mlp_vlm_trend_reward_sglang.yaml``): a ManiSkill
  dense "trend" reward (positive / negative / unclear read as 1.0 / -0.2 / 0, plus
  ``gt_success_bonus: 20``), one buffer with ``history_size: 5``, ``min_history_size: 5``,
  ``input_interval: 1``, ``input_on_done: false`` on the main and the extra (third-person)
  view, ``max_tokens: 16``, ``temperature: 0.0``. RLinf's LiberoEnv has no
  ``extra_view_images``: its observations hold ``main_images`` and ``wrist_images``, so a LIBERO
  re-creation's second view is the wrist camera.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

JPEG_QUALITY = 95
CONNECT_TIMEOUT_S = 120.0
# The views a LIBERO re-creation of the example shows: the main camera, then the wrist camera
# (in place of the example's extra view, which LiberoEnv does not have).
LIBERO_VIEWS: tuple[str, ...] = ("main_images", "wrist_images")


@dataclass(frozen=True)
class HistoryBuffer:
    """One history buffer's settings (RLinf's names); :data:`PER_CHUNK` is the example's."""

    history_size: int
    min_history_size: int = 0
    input_interval: int = 1
    input_on_done: bool = False

    def __post_init__(self) -> None:
        if self.history_size < 1 or self.min_history_size < 0 or self.input_interval < 1:
            raise ValueError(
                f"history_size and input_interval must be >= 1 and min_history_size >= 0, got "
                f"{self.history_size}, {self.input_interval}, {self.min_history_size}."
            )

    @property
    def label(self) -> str:
        """The settings as a config names them, for table rows."""
        on_done = "true" if self.input_on_done else "false"
        return (
            f"input_interval {self.input_interval}, input_on_done {on_done}, "
            f"history_size {self.history_size}, min_history_size {self.min_history_size}"
        )


PER_CHUNK = HistoryBuffer(history_size=5, min_history_size=5, input_interval=1, input_on_done=False)


def per_episode(chunk_steps: int, history_size: int = PER_CHUNK.history_size) -> HistoryBuffer:
    """The example's buffer asked once per episode: ``input_interval`` the episode's chunk steps,
    ``input_on_done`` true (the other settings the example's)."""
    return HistoryBuffer(history_size, PER_CHUNK.min_history_size, chunk_steps, input_on_done=True)


class Tick(NamedTuple):
    """One chunk end of one env: which chunk ends (1-based) its request carries, oldest first
    (empty: no request), and whether the env gave the worker any history input at all."""

    chunk: int
    window: tuple[int, ...]
    input_given: bool


def schedule(buffer: HistoryBuffer, chunk_steps: int, done_from: int | None = None) -> list[Tick]:
    """Every chunk end of one env's episode of ``chunk_steps`` chunks, as RLinf's history manager
    treats it (the rules in the module docstring).

    ``done_from``: the first chunk at whose end the env reports done, done from then on (a
    success without auto-reset); default the last chunk (the horizon's truncation).
    ``ValueError`` for a ``done_from`` outside ``1..chunk_steps``.
    """
    done_from = chunk_steps if done_from is None else done_from
    if not 1 <= done_from <= chunk_steps:
        raise ValueError(f"done_from must be in 1..{chunk_steps}, got {done_from}.")
    held: list[int] = []  # the chunk ends the env's history holds
    count = 0  # entries appended since the last done
    ticks = []
    for chunk in range(1, chunk_steps + 1):
        held.append(chunk)
        count += 1
        done = chunk >= done_from
        if len(held) < buffer.min_history_size:
            window, given = (), True
        elif count % buffer.input_interval == 0:
            window, given = tuple(held[-buffer.history_size :]), True
        elif done and buffer.input_on_done:
            window, given = tuple(held[max(0, len(held) - count % buffer.input_interval) :]), True
        else:
            window, given = (), False
        ticks.append(Tick(chunk, window, given))
        if done:
            held, count = [], 0
        else:
            held = held[-buffer.history_size :]
    return ticks


def requests_per_episode(buffer: HistoryBuffer, chunk_steps: int, done_from: int | None = None) -> int:
    """How many requests one env's episode sends (:func:`schedule`'s non-empty windows)."""
    return sum(1 for tick in schedule(buffer, chunk_steps, done_from) if tick.window)


def runs_in_rlinf_main(buffer: HistoryBuffer, chunk_steps: int, done_from: int | None = None) -> bool:
    """Whether RLinf main's API worker gets through the episode: False when some chunk gives it
    no history input at all (``{}``; every env in step, as in a fixed-horizon rollout)."""
    return all(tick.input_given for tick in schedule(buffer, chunk_steps, done_from))


@dataclass(frozen=True)
class RequestShape:
    """What one request carries besides its frames: the views, in order, and the sampling
    settings (the example's ``reward.api.sampling_params``)."""

    views: tuple[str, ...] = LIBERO_VIEWS
    max_tokens: int = 16
    temperature: float = 0.0


def jpeg_data_url(frame: np.ndarray, quality: int = JPEG_QUALITY) -> str:
    """One ``(H, W, 3)`` uint8 frame as a ``data:image/jpeg;base64,...`` URL."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(frame).save(buffer, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def payload(
    model: str, prompt: str, frames: Mapping[str, Sequence[np.ndarray]], shape: RequestShape
) -> dict[str, Any]:
    """The chat request for one env's window: each of ``shape.views``' frames (oldest first) as
    JPEG data URLs, view after view, then the prompt.

    ``ValueError`` naming a view of the shape that ``frames`` lacks or holds no frame of.
    """
    missing = [view for view in shape.views if not len(frames.get(view, ()))]
    if missing:
        raise ValueError(f"no frames for the view(s) {missing}; the shape needs {list(shape.views)}.")
    content: list[dict[str, Any]] = [
        {"type": "image_url", "image_url": {"url": jpeg_data_url(frame)}}
        for view in shape.views
        for frame in frames[view]
    ]
    content.append({"type": "text", "text": prompt})
    return {
        "model": model,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": shape.max_tokens,
        "temperature": shape.temperature,
    }


def post_all(url: str, payloads: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send every payload at once as the worker does (one new thread each, a bare ``requests.post``
    without proxies, one attempt, :data:`CONNECT_TIMEOUT_S` to connect, no read deadline); the
    answers in order. ``RuntimeError`` naming the URL when any request fails or answers non-2xx."""
    import requests

    def post(body: dict[str, Any]) -> dict[str, Any]:
        try:
            response = requests.post(
                url,
                json=body,
                proxies={"http": None, "https": None},
                timeout=(CONNECT_TIMEOUT_S, None),
            )
        except requests.RequestException as exc:
            raise RuntimeError(f"POST {url} failed: {exc}") from exc
        if not response.ok:
            raise RuntimeError(f"POST {url} failed: status {response.status_code}, {response.text[:500]}")
        return response.json()

    if not payloads:
        return []
    with ThreadPoolExecutor(max_workers=len(payloads)) as pool:
        return list(pool.map(post, payloads))
