"""Slow clients against the reward server, shared by the connection-abuse test and benchmark.

``tests/reliability/test_server_connections.py`` pins that the server closes slow-header
connections at its deadline; ``bench_connection_abuse.py`` measures the same attack before and
after a change. Both hold the sockets open with :func:`trickling_headers` and count what the
server holds with :func:`server_sockets`, so the test checks exactly what the benchmark measures.
This lives under ``benchmarks/`` because benchmarks never import ``tests/``; the tests import it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator, Sequence

import psutil


def server_sockets(pid: int) -> int:
    """TCP sockets the server process ``pid`` holds (its listener included)."""
    return len(psutil.Process(pid).net_connections(kind="tcp"))


@contextlib.contextmanager
def trickling_headers(socks: Sequence[socket.socket], every_s: float) -> Iterator[None]:
    """While the block runs, keep ``socks`` inside a request's headers: each gets a request line
    and a ``Host`` header at once, then one more header every ``every_s`` seconds (a socket the
    server closed is skipped). The sender thread is stopped and joined on exit; the sockets are
    the caller's to close."""
    stop = threading.Event()

    def trickle() -> None:
        for s in socks:
            s.sendall(b"POST /score HTTP/1.1\r\nHost: x\r\n")
        while not stop.wait(every_s):
            for s in socks:
                with contextlib.suppress(OSError):
                    s.sendall(b"X-Slow: 1\r\n")

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
