"""The reward server's ASGI middlewares: the request log and the request-body limits.

Plain ASGI (no framework), so they also see what the app never does: a 413 sent before
routing, a client that disconnects mid-upload. :func:`send_error` sends an error of
:mod:`vlm_reward.errors` from any middleware in the protocol's one shape.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from vlm_reward.errors import (
    PayloadTooLargeError,
    RequestTimeoutError,
    ServerBusyError,
    error_response,
)

logger = logging.getLogger("vlm_reward.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def send_error(
    send: Send, exc: Exception, headers: list[tuple[bytes, bytes]] | None = None, close: bool = False
) -> None:
    """Send ``exc`` as the protocol's JSON error (its status from :func:`error_response`).

    ``close`` adds ``Connection: close``: after a request whose body was not read, the
    connection cannot carry another request.
    """
    status, body = error_response(exc)
    payload = json.dumps(body).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    head += headers or []
    if close:
        head.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": payload})


class BodySizeLimit:
    """413 for request bodies over ``max_bytes``; 503 past the bytes budget; 408 past the deadline.

    The body is read here, bounded, and replayed to the app, so no handler can be made to
    buffer an unbounded upload. An oversized body is drained (up to a cap) before the 413
    is sent: a client still uploading would otherwise see a broken pipe, not the error.

    ``budget_bytes`` bounds the bodies of all requests in flight together (the server's
    memory for uploads): a request reserves its ``Content-Length`` (``max_bytes`` when it
    sends chunks) before a byte is read and keeps it until it is answered; one that does
    not fit gets 503 ``server_busy`` with ``Retry-After`` at once. ``body_timeout_s`` is
    the deadline for the whole body: a client that trickles it gets 408 and is dropped.
    """

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        budget_bytes: int | None = None,
        body_timeout_s: float | None = None,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.drain_cap = max(4 * max_bytes, 64 * 1024 * 1024)
        self.budget_bytes = budget_bytes
        self.body_timeout_s = body_timeout_s
        self.reserved_bytes = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.drain_cap:
            await self._reject(send)
            return
        reserve = _body_reservation(scope, declared, self.max_bytes)
        if self.budget_bytes is not None and reserve and self.reserved_bytes + reserve > self.budget_bytes:
            mb = self.budget_bytes / (1024 * 1024)
            busy = ServerBusyError(
                f"the request bodies in flight already use this server's budget of {mb:.0f} MB "
                "(--max-inflight-mb); retry in a moment."
            )
            await send_error(send, busy, headers=[(b"retry-after", b"1")], close=True)
            return
        self.reserved_bytes += reserve
        try:
            await self._read_then_call(scope, receive, send)
        finally:
            self.reserved_bytes -= reserve

    async def _read_then_call(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with asyncio.timeout(self.body_timeout_s):
                size, body = await self._read_body(receive)
        except TimeoutError:
            late = RequestTimeoutError(
                f"the request body did not arrive within {self.body_timeout_s:g} s (--body-timeout)."
            )
            await send_error(send, late, close=True)
            return
        if size is None:  # the client left mid-upload
            return
        if size > self.max_bytes:
            await self._reject(send)
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read_body(self, receive: Receive) -> tuple[int | None, bytes]:
        """(size, body): the body if it fits ``max_bytes``; size ``None`` on a disconnect."""
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None, b""
            size += len(message.get("body", b""))
            if size <= self.max_bytes:
                chunks.append(message.get("body", b""))
            elif size > self.drain_cap:
                break
            more = message.get("more_body", False)
        return size, b"".join(chunks)

    async def _reject(self, send: Send) -> None:
        mb = self.max_bytes / (1024 * 1024)
        exc = PayloadTooLargeError(
            f"request body is larger than this server's limit of {mb:.2f} MB "
            "(set by --max-video-mb, base64 included)."
        )
        await send_error(send, exc)


def _body_reservation(scope: Scope, declared: int | None, max_bytes: int) -> int:
    """Bytes a request's body may take: its ``Content-Length``, else ``max_bytes`` if it is chunked."""
    if declared is not None:
        return min(declared, max_bytes)
    chunked = any(key == b"transfer-encoding" for key, _ in scope.get("headers", []))
    return max_bytes if chunked else 0


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            with contextlib.suppress(ValueError):
                return int(value)
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: wait for the disconnect like Starlette expects

    return replay


class RequestLog:
    """One log line per request with backend, status and latency.

    ``/health`` is logged at DEBUG: clients poll it while a model loads.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            backend = scope.get("state", {}).get("backend", "-")
            level = logging.DEBUG if scope.get("path") == "/health" else logging.INFO
            logger.log(
                level,
                "%s %s backend=%s status=%d latency=%.3fs",
                scope.get("method"),
                scope.get("path"),
                backend,
                status,
                time.perf_counter() - start,
            )
