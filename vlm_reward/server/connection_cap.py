"""A cap on the server's open connections that an attacker cannot use to shut clients out.

Hypercorn has no setting for it, and a plain cap (refuse, or leave in the kernel's backlog,
every connection past N) hands the server to whoever opens N connections first: the env's
clients would wait behind them. Here, a connection accepted at the cap evicts the oldest
open connection that has no request in progress (one that never finished its headers, or
idles between requests); only when every connection is serving a request is the new one
closed at once. An attacker's connections are then the ones that go, and a normal request
gets in at once.

How: the listening socket is wrapped (:meth:`ConnectionCap.listener`) so each accepted
connection is registered until it is closed, and :meth:`ConnectionCap.track_requests` (ASGI
middleware) marks the peers with a request in progress. Everything runs on the event loop's
thread (asyncio calls ``accept`` and ``close`` there), so no lock is needed.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from vlm_reward.server.middleware import ASGIApp, Receive, Scope, Send

logger = logging.getLogger("vlm_reward.server")

Peer = tuple[str, int]


class ConnectionCap:
    """At most ``max_connections`` open connections, evicting idle ones first (see the module)."""

    def __init__(self, max_connections: int) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be >= 1, got {max_connections}.")
        self.max_connections = max_connections
        self.open: OrderedDict[int, _Connection] = OrderedDict()  # oldest first
        self.busy: dict[Peer, int] = {}  # peer -> requests in progress
        self.evicted = 0
        self.refused = 0

    def listener(self, sock: socket.socket) -> socket.socket:
        """``sock`` (a bound, listening socket) as one whose ``accept`` applies the cap."""
        return _Listener(sock, self)

    def track_requests(self, app: ASGIApp) -> ASGIApp:
        """ASGI middleware marking a connection busy while one of its requests is in progress."""

        async def tracked(scope: Scope, receive: Receive, send: Send) -> None:
            client = scope.get("client")
            if scope["type"] != "http" or not client:
                await app(scope, receive, send)
                return
            peer = (str(client[0]), int(client[1]))
            self.busy[peer] = self.busy.get(peer, 0) + 1
            try:
                await app(scope, receive, send)
            finally:
                self.busy[peer] -= 1
                if not self.busy[peer]:
                    del self.busy[peer]

        return tracked

    def admit(self, conn: _Connection) -> bool:
        """Register ``conn``; at the cap, evict the oldest idle connection first.

        False (and ``conn`` must be closed) when every open connection is serving a request.
        """
        if len(self.open) >= self.max_connections:
            transports = _transports()
            idle = (c for c in self.open.values() if c.peer not in self.busy and _live(transports, c))
            victim = next(idle, None)
            if victim is None:
                self.refused += 1
                return False
            self.evicted += 1
            victim.evict(transports[victim.fileno()])
        self.open[id(conn)] = conn
        return True

    def forget(self, conn: _Connection) -> None:
        self.open.pop(id(conn), None)


def _transports() -> Mapping[int, Any]:
    """The running selector loop's descriptor -> transport map (``_transports``: no public API
    gives a connection's transport from its socket); empty on a loop without one."""
    return getattr(asyncio.get_running_loop(), "_transports", {})


def _live(transports: Mapping[int, Any], conn: _Connection) -> bool:
    """Whether ``conn`` has a transport that is open (a closed one may still map a reused descriptor)."""
    transport = transports.get(conn.fileno())
    return transport is not None and not transport.is_closing()


class _Connection(socket.socket):
    """An accepted connection that leaves the cap's register when it is closed."""

    def __init__(self, family: int, kind: int, proto: int, fileno: int, cap: ConnectionCap) -> None:
        super().__init__(family, kind, proto, fileno=fileno)
        self._cap = cap
        try:
            name = self.getpeername()
            self.peer: Peer = (str(name[0]), int(name[1]))
        except OSError:
            self.peer = ("", 0)

    def evict(self, transport: Any) -> None:
        """Close the connection now by aborting its asyncio transport, which frees the descriptor
        at once (shutting the socket down would leave Hypercorn holding it until its idle timer)."""
        self._cap.forget(self)
        transport.abort()

    def close(self) -> None:
        self._cap.forget(self)
        super().close()


class _Listener(socket.socket):
    """A listening socket whose ``accept`` registers each connection with the cap."""

    def __init__(self, sock: socket.socket, cap: ConnectionCap) -> None:
        super().__init__(sock.family, sock.type, sock.proto, fileno=sock.detach())
        self._cap = cap

    def accept(self) -> tuple[socket.socket, Any]:
        fd, address = self._accept()  # type: ignore[attr-defined]
        conn = _Connection(self.family, self.type, self.proto, fd, self._cap)
        if socket.getdefaulttimeout() is None and self.gettimeout() is not None:
            conn.setblocking(True)  # what socket.accept does; asyncio sets it non-blocking next
        if not self._cap.admit(conn):
            conn.close()
            raise BlockingIOError("connection refused: every connection is serving a request")
        return conn, address
