"""The re-created RLinf API reward worker (benchmarks.rlinf_api_request) against RLinf main's behaviour.

Every expected value here was read off RLinf main at a3816b5, not off the re-creation: the
windows from ``rlinf/utils/env_helpers/history_manager.py`` (``build_history_input``, one entry
appended per chunk end before it runs), the request from ``rlinf/workers/reward/api_reward_worker.py``
(``_build_chat_payloads``), the transport from ``rlinf/utils/http_client.py`` (``post``), the
settings from ``examples/embodiment/config/maniskill_ppo_mlp_vlm_trend_reward_sglang.yaml``.
"""

from __future__ import annotations

import base64
import io
import threading

import numpy as np
import pytest
import requests

from benchmarks import rlinf_api_request as peer
from benchmarks.rlinf_api_request import PER_CHUNK, HistoryBuffer, per_episode


def _windows(
    buffer: HistoryBuffer, chunk_steps: int, done_from: int | None = None
) -> dict[int, tuple[int, ...]]:
    return {tick.chunk: tick.window for tick in peer.schedule(buffer, chunk_steps, done_from) if tick.window}


def test_the_example_s_buffer_is_5_chunk_ends_at_every_chunk_once_5_are_held() -> None:
    # The example: history_size 5, min_history_size 5, input_interval 1, input_on_done false.
    assert (PER_CHUNK.history_size, PER_CHUNK.min_history_size, PER_CHUNK.input_interval) == (5, 5, 1)
    assert not PER_CHUNK.input_on_done
    ticks = peer.schedule(PER_CHUNK, 64)
    # Below min_history_size an env gives an empty window (no request; no first-frame padding).
    assert [tick.window for tick in ticks[:4]] == [()] * 4
    assert ticks[4].window == (1, 2, 3, 4, 5)
    assert ticks[5].window == (2, 3, 4, 5, 6)
    assert ticks[-1].window == (60, 61, 62, 63, 64)
    assert peer.requests_per_episode(PER_CHUNK, 64) == 60  # RLinf's libero_10 episode: 64 chunks
    assert peer.runs_in_rlinf_main(PER_CHUNK, 64)


@pytest.mark.parametrize(
    ("buffer", "done_from", "windows", "runs"),
    [
        (per_episode(8), None, {8: (4, 5, 6, 7, 8)}, False),
        # On done past the last tick: the 5 kept by the cut plus the chunk end appended since.
        (HistoryBuffer(5, 5, 10, input_on_done=True), None, {8: (3, 4, 5, 6, 7, 8)}, False),
        # A success at chunk 4 without auto-reset: done stays, the history is cleared each chunk.
        (
            HistoryBuffer(5, 0, 8, input_on_done=True),
            4,
            {4: (1, 2, 3, 4), 5: (5,), 6: (6,), 7: (7,), 8: (8,)},
            False,
        ),
        (HistoryBuffer(5, 5, 8, input_on_done=True), 4, {}, True),
        (HistoryBuffer(2, 0, 2), None, {2: (1, 2), 4: (3, 4), 6: (5, 6), 8: (7, 8)}, False),
        (HistoryBuffer(5, 5, 8, input_on_done=False), 4, {}, True),
    ],
    ids=[
        "per-episode",
        "interval-past-the-episode",
        "success-then-every-chunk",
        "success-before-min-history",
        "every-other-chunk",
        "no-input-on-done",
    ],
)
def test_windows_follow_rlinf_s_history_manager(
    buffer: HistoryBuffer, done_from: int | None, windows: dict[int, tuple[int, ...]], runs: bool
) -> None:
    assert _windows(buffer, 8, done_from) == windows
    # A chunk where no env is due gives the worker `{}`, which RLinf main's worker cannot take.
    assert peer.runs_in_rlinf_main(buffer, 8, done_from) is runs


def test_a_success_before_the_per_episode_tick_sends_once_with_one_chunk_end_more() -> None:
    # Done at chunk 40 of 64 (a success without auto-reset): input_on_done takes the entries since
    # the last tick, the 5 the cut kept plus the one appended since; the history is then cleared
    # at every chunk the env stays done, below min_history_size for good. Chunks 5-39 give `{}`.
    ticks = peer.schedule(per_episode(64), 64, done_from=40)
    assert {tick.chunk: tick.window for tick in ticks if tick.window} == {40: (35, 36, 37, 38, 39, 40)}
    assert [tick.chunk for tick in ticks if not tick.input_given] == list(range(5, 40))


def test_between_ticks_there_is_no_history_input_at_all() -> None:
    # RLinf's own test_history_manager: interval 3, min 1: `{}` after the 2nd append.
    ticks = peer.schedule(HistoryBuffer(2, 1, 3, input_on_done=True), 6)
    assert [tick.input_given for tick in ticks] == [False, False, True, False, False, True]
    assert [tick.window for tick in ticks if tick.window] == [(2, 3), (5, 6)]


@pytest.mark.parametrize(
    ("kwargs", "done_from", "message"),
    [
        ({"history_size": 0}, None, "history_size"),
        ({"history_size": 5, "input_interval": 0}, None, "input_interval"),
        ({"history_size": 5, "min_history_size": -1}, None, "min_history_size"),
        ({"history_size": 5}, 9, "done_from"),
    ],
    ids=["no-history", "no-interval", "negative-min", "done-past-the-end"],
)
def test_bad_settings_are_refused(kwargs: dict, done_from: int | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        peer.schedule(HistoryBuffer(**kwargs), 8, done_from)


def _frames(view: int, count: int) -> list[np.ndarray]:
    """Frames whose pixels say which view and which step they are (view * 100 + step)."""
    return [np.full((16, 16, 3), view * 100 + step, np.uint8) for step in range(count)]


def _jpeg_bytes(url: str) -> bytes:
    head, data = url.split(",", 1)
    assert head == "data:image/jpeg;base64"
    return base64.b64decode(data)


def test_one_user_message_of_view_major_jpeg_frames_then_the_prompt() -> None:
    from PIL import Image

    frames = {"main_images": _frames(0, 3), "wrist_images": _frames(1, 3)}
    body = peer.payload("judge", "Is it progressing?", frames, peer.RequestShape())
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("judge", 16, 0.0)
    [message] = body["messages"]
    assert message["role"] == "user"
    *images, text = message["content"]
    assert text == {"type": "text", "text": "Is it progressing?"}
    urls = [item["image_url"]["url"] for item in images]
    values = [int(np.median(np.asarray(Image.open(io.BytesIO(_jpeg_bytes(url)))))) for url in urls]
    assert values == pytest.approx([0, 1, 2, 100, 101, 102], abs=2)  # the main view first, oldest first
    # Quality 95, as PIL writes it for that setting.
    expected = io.BytesIO()
    Image.fromarray(frames["main_images"][0]).save(expected, format="JPEG", quality=95)
    assert _jpeg_bytes(urls[0]) == expected.getvalue()


def test_a_view_the_shape_needs_must_have_frames() -> None:
    for frames in ({"main_images": _frames(0, 3)}, {"main_images": _frames(0, 3), "wrist_images": []}):
        with pytest.raises(ValueError, match="wrist_images"):
            peer.payload("judge", "p", frames, peer.RequestShape())


class _Answer:
    def __init__(self, status: int) -> None:
        self.status_code, self.ok, self.text = status, status < 400, "refused"

    def json(self) -> dict:
        return {"usage": {"prompt_tokens": 1}}


def test_each_request_is_one_attempt_on_its_own_thread_with_a_connect_deadline_only(monkeypatch) -> None:
    calls: list[dict] = []
    together = threading.Barrier(3, timeout=10)  # the three requests are in flight at once

    def post(url: str, **kwargs) -> _Answer:
        together.wait()
        calls.append(kwargs)
        return _Answer(200)

    monkeypatch.setattr(requests, "post", post)
    answers = peer.post_all("http://judge/v1/chat/completions", [{"n": 1}, {"n": 2}, {"n": 3}])
    assert answers == [{"usage": {"prompt_tokens": 1}}] * 3
    assert sorted(call["json"]["n"] for call in calls) == [1, 2, 3]
    assert {(call["timeout"], str(call["proxies"])) for call in calls} == {
        ((120.0, None), str({"http": None, "https": None}))
    }
    assert peer.post_all("http://judge/v1/chat/completions", []) == []


def test_a_failed_request_fails_the_whole_call(monkeypatch) -> None:
    monkeypatch.setattr(requests, "post", lambda url, **kwargs: _Answer(503))
    with pytest.raises(RuntimeError, match="status 503"):
        peer.post_all("http://judge/v1/chat/completions", [{}, {}])
    # Nothing listens on the discard port: the one attempt fails, and so does the call.
    monkeypatch.undo()
    with pytest.raises(RuntimeError, match=r"127\.0\.0\.1:9"):
        peer.post_all("http://127.0.0.1:9/v1/chat/completions", [{}])
