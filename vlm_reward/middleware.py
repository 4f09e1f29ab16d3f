"""The reward server's two ASGI middlewares: the request log and the body-size limit.

Plain ASGI (no framework), so they also see what the app never does: a 413 sent before
routing, a client that disconnects mid-upload.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from vlm_reward.errors import PayloadTooLargeError, error_response

logger = logging.getLogger("vlm_reward.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class BodySizeLimit:
    """413 for request bodies over ``max_bytes``, chunked or not.

    The body is read here, bounded, and replayed to the app, so no handler can be made to
    buffer an unbounded upload. An oversized body is drained (up to a cap) before the 413
    is sent: a client still uploading would otherwise see a broken pipe, not the error.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.drain_cap = max(4 * max_bytes, 64 * 1024 * 1024)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.drain_cap:
            await self._reject(send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            size += len(message.get("body", b""))
            if size <= self.max_bytes:
                chunks.append(message.get("body", b""))
            elif size > self.drain_cap:
                break
            more = message.get("more_body", False)
        if size > self.max_bytes:
            await self._reject(send)
            return
        await self.app(scope, _replay(b"".join(chunks), receive), send)

    async def _reject(self, send: Send) -> None:
        mb = self.max_bytes / (1024 * 1024)
        exc = PayloadTooLargeError(
            f"request body is larger than this server's limit of {mb:.2f} MB "
            "(set by --max-video-mb, base64 included)."
        )
        status, body = error_response(exc)
        payload = json.dumps(body).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


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
