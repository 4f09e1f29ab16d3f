"""The re-created RLinf request shape (benchmarks.rlinf_api_request) against the facts it is built from."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest

from benchmarks import rlinf_api_request as peer


def _frames(view: int, count: int) -> list[np.ndarray]:
    """Frames whose pixels say which view and which step they are (view * 100 + step)."""
    return [np.full((16, 16, 3), view * 100 + step, np.uint8) for step in range(count)]


def _decoded(url: str) -> np.ndarray:
    from PIL import Image

    head, data = url.split(",", 1)
    assert head == "data:image/jpeg;base64"
    image = Image.open(io.BytesIO(base64.b64decode(data)))
    assert image.format == "JPEG"
    return np.asarray(image)


def test_one_user_message_of_view_major_jpeg_frames_then_the_prompt() -> None:
    shape = peer.PeerShape()
    body = peer.payload(
        "judge",
        "Did the robot succeed?",
        {"main_images": _frames(0, 7), "wrist_images": _frames(1, 7)},
        shape,
    )
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("judge", 16, 0.0)
    [message] = body["messages"]
    assert message["role"] == "user"
    *images, text = message["content"]
    assert text == {"type": "text", "text": "Did the robot succeed?"}
    assert len(images) == 2 * 5 and all(item["type"] == "image_url" for item in images)
    values = [int(np.median(_decoded(item["image_url"]["url"]))) for item in images]
    # The latest five of each view, the main view first: steps 2..6 of view 0, then of view 1.
    assert values == pytest.approx([2, 3, 4, 5, 6, 102, 103, 104, 105, 106], abs=2)


def test_jpeg_quality_95_is_what_the_urls_carry() -> None:
    frame = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    sizes = {q: len(peer.jpeg_data_url(frame, q)) for q in (75, 95)}
    assert len(peer.jpeg_data_url(frame, peer.PeerShape().jpeg_quality)) == sizes[95] > sizes[75]


def test_a_short_history_repeats_its_first_frame() -> None:
    frames = _frames(0, 2)
    assert [int(f[0, 0, 0]) for f in peer.history(frames, 5)] == [0, 0, 0, 0, 1]


@pytest.mark.parametrize(
    ("views", "message"),
    [
        ({"main_images": _frames(0, 3)}, "wrist_images"),
        ({"main_images": [], "wrist_images": _frames(1, 1)}, "no frame"),
    ],
    ids=["missing-view", "empty-history"],
)
def test_missing_frames_are_refused(views: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        peer.payload("judge", "p", views, peer.PeerShape())


@pytest.mark.parametrize(
    ("answer", "reward"),
    [("positive", 1.0), (" Negative\n", -0.2), ("unclear", 0.0), ("yes", 0.0), (None, 0.0)],
    ids=["positive", "negative", "unclear", "invalid", "no-answer"],
)
def test_answers_map_to_rlinf_s_rewards(answer: str | None, reward: float) -> None:
    assert peer.reward_of(answer) == reward


def test_the_transport_is_one_attempt_with_a_connect_deadline_only() -> None:
    shape = peer.PeerShape()
    assert (shape.connect_timeout_s, shape.read_timeout_s) == (120.0, None)
    assert peer.post_all("http://127.0.0.1:9/v1/chat/completions", [], shape) == []
    # Nothing listens on the discard port: the one attempt fails, and the reward is invalid.
    assert peer.post_all("http://127.0.0.1:9/v1/chat/completions", [{}], shape) == [None]
