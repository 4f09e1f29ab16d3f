"""The connection cap on a plain asyncio server (milliseconds): who is evicted, who is refused.

The real server under abuse is in ``tests/reliability/test_server_connections.py``.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from vlm_reward.server.connection_cap import ConnectionCap


async def _serve(cap: ConnectionCap) -> tuple[asyncio.AbstractServer, int]:
    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the peer, or the cap, ends the connection
        writer.close()

    raw = socket.socket()
    raw.bind(("127.0.0.1", 0))
    raw.listen(64)
    server = await asyncio.start_server(hold, sock=cap.listener(raw))
    return server, server.sockets[0].getsockname()[1]


async def _connect(port: int, n: int) -> list[socket.socket]:
    socks = []
    for _ in range(n):
        socks.append(await asyncio.to_thread(socket.create_connection, ("127.0.0.1", port)))
        await asyncio.sleep(0.02)  # accepted and given a transport before the next one
    return socks


def _ended(sock: socket.socket) -> bool:
    sock.settimeout(0.05)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


CASES = [
    # (cap, connections, busy ones (by order), the ones the server ends)
    ("under-the-cap", 3, 2, (), ()),
    ("oldest-idle-evicted", 3, 5, (), (0, 1)),
    ("busy-ones-kept", 3, 5, (0,), (1, 2)),
    ("all-busy-new-refused", 2, 4, (0, 1), (2, 3)),
]


@pytest.mark.parametrize(
    ("cap_size", "count", "busy", "ended"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_cap_evicts_the_oldest_idle_connection(
    cap_size: int, count: int, busy: tuple[int, ...], ended: tuple[int, ...]
) -> None:
    async def scenario() -> list[bool]:
        cap = ConnectionCap(cap_size)
        server, port = await _serve(cap)
        socks = await _connect(port, max(busy, default=-1) + 1)
        for i in busy:  # what track_requests records for a connection with a request in progress
            cap.busy[("127.0.0.1", socks[i].getsockname()[1])] = 1
        socks += await _connect(port, count - len(socks))
        await asyncio.sleep(0.1)
        result = await asyncio.to_thread(lambda: [_ended(s) for s in socks])
        assert len(cap.open) == min(count, cap_size)
        for s in socks:
            s.close()
        server.close()
        return result

    assert asyncio.run(scenario()) == [i in ended for i in range(count)]


def test_a_cap_below_one_is_an_error() -> None:
    with pytest.raises(ValueError, match="max_connections must be >= 1, got 0"):
        ConnectionCap(0)
