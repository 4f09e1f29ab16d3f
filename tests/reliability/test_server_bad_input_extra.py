"""Bad input the request table of ``tests/vlm_reward/server/test_server.py`` does not cover.

That table has wrong types, sizes, bad base64, missing/empty/junk files, ``..`` and
symlink escapes. Here: 1-frame videos, unicode and NUL in paths, lone surrogates, bodies
that are not UTF-8 or nest too deep, more wrong types and bounds, inline bytes that are
not a video, and proof that nothing outside ``--video-root`` is opened: the targets
outside the root are FIFOs, which block whoever opens them for reading, so a server that
opened one would hang instead of answering 403 at once.
"""

from __future__ import annotations

import base64
import errno
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import moving_square_frames
from tests.support.server import ServerProcess
from tests.support.video_frames import count_frames
from vlm_reward.video_io import encode_mp4

pytestmark = pytest.mark.slow

# A server that opened a FIFO would block until this expires; its answers take milliseconds.
REQUEST_TIMEOUT = 10
UNICODE_NAME = "épisode 把碗 🍜.mp4"
URLSAFE = str.maketrans("+/", "-_")  # the other base64 alphabet; the server takes the standard one


@dataclass(frozen=True)
class BadInputCase:
    root: Path
    outside: Path
    one_frame_b64: str


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> BadInputCase:
    root, outside = tmp_path_factory.mktemp("root"), tmp_path_factory.mktemp("outside")
    encode_mp4(moving_square_frames(1), root / "one_frame.mp4", fps=4)
    encode_mp4(moving_square_frames(8), root / UNICODE_NAME, fps=4)
    os.mkfifo(root / "fifo_inside.mp4")
    os.mkfifo(outside / "secret.mp4")
    (root / "link_to_outside_fifo.mp4").symlink_to(outside / "secret.mp4")
    (root / "outside_dir").symlink_to(outside, target_is_directory=True)
    return BadInputCase(root, outside, base64.b64encode((root / "one_frame.mp4").read_bytes()).decode())


@pytest.fixture(scope="module")
def server(ctx: BadInputCase, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    args = ["--backend", "fixed_score", "--model", "m", "--video-root", str(ctx.root)]
    proc = ServerProcess(args, tmp_path_factory.mktemp("logs") / "server.log").wait_ready()
    yield proc
    proc.stop()


def _post(server: ServerProcess, body: Any) -> requests.Response:
    if isinstance(body, bytes):
        headers = {"content-type": "application/json"}
        return requests.post(server.endpoint, data=body, headers=headers, timeout=REQUEST_TIMEOUT)
    return requests.post(server.endpoint, json=body, timeout=REQUEST_TIMEOUT)


def _req(**fields: Any) -> Callable[[BadInputCase], dict[str, Any]]:
    """A valid request for the 1-frame video with ``fields`` changed."""
    return lambda c: {"task_text": "put the bowl on the plate", "video_path": "one_frame.mp4", **fields}


def _at(path_of: Callable[[BadInputCase], str]) -> Callable[[BadInputCase], dict[str, Any]]:
    """A valid request whose ``video_path`` depends on the fixture's directories."""
    return lambda c: _req(video_path=path_of(c))(c)


def _inline(data: bytes) -> Callable[[BadInputCase], dict[str, Any]]:
    return lambda c: {"task_text": "t", "video_b64": base64.b64encode(data).decode()}


def _raw(body: bytes) -> Callable[[BadInputCase], bytes]:
    return lambda c: body


GOOD = [
    pytest.param(_req(), id="one-frame-video-by-path"),
    pytest.param(lambda c: {"task_text": "t", "video_b64": c.one_frame_b64}, id="one-frame-video-inline"),
    pytest.param(_req(nframes=1), id="one-frame-video-nframes-1"),
    pytest.param(_req(video_path=UNICODE_NAME), id="unicode-file-name"),
    pytest.param(_req(task_text="x" * 8192), id="task-text-at-the-limit"),
    # JSON may come as UTF-16/32 with a BOM (RFC 8259 allows parsers to accept it; Python's does).
    pytest.param(
        _raw('{"task_text": "t", "video_path": "one_frame.mp4"}'.encode("utf-16")), id="utf-16-json-body"
    ),
]


@pytest.mark.parametrize("build", GOOD)
def test_edge_case_that_is_valid_is_scored(server: ServerProcess, ctx: BadInputCase, build: Callable) -> None:
    response = _post(server, build(ctx))
    assert response.status_code == 200, response.text
    assert response.json()["score"] == pytest.approx(0.8)


def test_the_fixtures_are_what_the_cases_claim(ctx: BadInputCase) -> None:
    assert count_frames(ctx.root / "one_frame.mp4") == 1
    assert set("+/") & set(ctx.one_frame_b64), "the urlsafe case needs characters to translate"


V422, OUTSIDE = "validation_error", "video_outside_root"
BAD = [
    # paths
    ("nul-in-path", _req(video_path="one_frame.mp4\x00.txt"), 400, "invalid_request", "NUL"),
    ("empty-path", _req(video_path=""), 422, V422, "video_path"),
    ("fifo-inside-root", _req(video_path="fifo_inside.mp4"), 400, "invalid_video", "not a regular file"),
    ("fifo-outside-absolute", _at(lambda c: str(c.outside / "secret.mp4")), 403, OUTSIDE, "root"),
    ("symlink-to-outside-fifo", _req(video_path="link_to_outside_fifo.mp4"), 403, OUTSIDE, "symlinks"),
    ("symlinked-dir-escape", _req(video_path="outside_dir/secret.mp4"), 403, OUTSIDE, "symlinks"),
    ("dotdot-into-outside", _at(lambda c: f"../{c.outside.name}/secret.mp4"), 403, OUTSIDE, "root"),
    # types
    ("task-text-null", _req(task_text=None), 422, V422, "task_text"),
    ("video-path-number", _req(video_path=5), 422, V422, "video_path"),
    ("nframes-float", _req(nframes=16.0), 422, V422, "nframes"),
    ("nframes-bool", _req(nframes=True), 422, V422, "nframes"),
    ("video-fps-string", _req(video_fps="4"), 422, V422, "video_fps"),
    ("backend-number", _req(backend=7), 422, V422, "backend"),
    # sizes and bounds
    ("task-text-too-long", _req(task_text="x" * 8193), 422, "limit_exceeded", "(--max-prompt-chars)"),
    ("huge-max-pixels", _req(max_pixels=10**9), 422, "limit_exceeded", "(--max-pixels)"),
    ("huge-video-fps", _req(video_fps=1e6), 422, V422, "video_fps"),
    ("empty-video-b64", lambda c: {"task_text": "t", "video_b64": ""}, 422, V422, "video_b64"),
    # encodings and unicode
    ("lone-surrogate-task", _raw(b'{"task_text": "\\ud800", "video_path": "one_frame.mp4"}'), 422, V422,
     "task_text"),
    ("lone-surrogate-path", _raw(b'{"task_text": "t", "video_path": "\\udcff.mp4"}'), 422, V422,
     "video_path"),
    ("latin-1-body", _raw('{"task_text": "café", "video_path": "one_frame.mp4"}'.encode("latin-1")), 400,
     "invalid_request", "parsing the body"),
    ("nested-too-deep", _raw(b'{"task_text": "t", "video_path": "one_frame.mp4", "backend_kwargs": '
     + b'{"a": ' * 5000 + b"1" + b"}" * 5001), 400, "invalid_request", "parsing the body"),
    ("empty-body", _raw(b""), 422, V422, "Field required"),
    ("urlsafe-base64", lambda c: {"task_text": "t", "video_b64": c.one_frame_b64.translate(URLSAFE)}, 400,
     "invalid_request", "not valid base64"),
    # inline bytes that are not a video
    ("inline-html", _inline(b"<html>" * 100), 400, "invalid_video", "cannot be decoded"),
    ("inline-truncated-mp4", lambda c: _inline(base64.b64decode(c.one_frame_b64)[:200])(c), 400,
     "invalid_video", "video"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("build", "status", "error_type", "fragment"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_input_gets_its_documented_error(
    server: ServerProcess, ctx: BadInputCase, build: Callable, status: int, error_type: str, fragment: str
) -> None:
    response = _post(server, build(ctx))
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}, body
    assert (response.status_code, body["error"]["type"]) == (status, error_type), body
    assert fragment in body["error"]["message"]
    assert str(ctx.root) not in body["error"]["message"] and str(ctx.outside) not in body["error"]["message"]


def test_nothing_outside_the_root_was_opened_and_the_server_still_serves(
    server: ServerProcess, ctx: BadInputCase
) -> None:
    # Opening a FIFO's write end without blocking fails (ENXIO) unless someone holds the read end.
    with pytest.raises(OSError) as info:
        os.close(os.open(ctx.outside / "secret.mp4", os.O_WRONLY | os.O_NONBLOCK))
    assert info.value.errno == errno.ENXIO
    response = _post(server, _req()(ctx))
    assert response.status_code == 200 and requests.get(server.url("/health"), timeout=5).status_code == 200
