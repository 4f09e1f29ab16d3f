"""``probe_health`` against raw sockets: what a half-answered, silent or absent server reads as.

A replica's start-up polls ``/health`` while its judge loads beside a training; a loaded machine
can send the status line and stall on the body. The status is the answer; a stalled body must not
turn into an exception (it once failed a replica's start in CI).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from vlm_reward.tools.server_process import HealthReply, probe_health

FULL_503 = b'HTTP/1.1 503 Service Unavailable\r\nContent-Length: 17\r\n\r\n{"state": "load"}'
STALLED_503 = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 100\r\n\r\n{"
FULL_200 = b'HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n{"state": ""}'


@contextmanager
def raw_server(reply: bytes | None) -> Iterator[str]:
    """A listener on 127.0.0.1 that reads one request and sends ``reply`` (``None``: nothing), then
    holds the connection open until the test ends."""
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            if reply is not None:
                connection.sendall(reply)
            done.wait(10)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/health"
    finally:
        done.set()
        thread.join(10)
        listener.close()


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (FULL_200, HealthReply(200, '{"state": ""}')),
        (FULL_503, HealthReply(503, '{"state": "load"}')),
        (STALLED_503, HealthReply(503, "")),
        (None, None),
    ],
    ids=["ready", "loading", "loading-body-stalls", "silent"],
)
def test_probe_health_reads_the_status_whatever_follows(
    reply: bytes | None, expected: HealthReply | None
) -> None:
    with raw_server(reply) as url:
        assert probe_health(url, timeout=0.5) == expected


def test_nothing_listening_is_no_answer() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    assert probe_health(f"http://127.0.0.1:{port}/health", timeout=0.5) is None
