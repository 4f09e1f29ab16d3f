"""API keys: who may spend the judge's GPU and read videos under ``--video-root``.

The server reads its keys from the environment variable :data:`API_KEY_ENV` (comma-separated)
or from ``--api-key-file`` (one per line), never from a command-line value, which ``ps``
shows to every user of the node. Several keys are accepted at once so a key can be rotated
without a restart of every client at the same moment. With keys set, every route but
``GET /health`` (and ``GET /metrics`` with ``--metrics-public``) needs
``Authorization: Bearer <key>``; anything else is 401 ``unauthorized``.

The keys never leave :class:`ApiKeys`: its ``repr`` says how many there are, never what they
are, and the comparison hashes both sides and compares every key in constant time, so
neither the key's length nor its first differing byte shows in the response time.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Collection, Mapping

from vlm_reward.errors import UnauthorizedError
from vlm_reward.protocol import API_KEY_ENV, AUTH_SCHEME
from vlm_reward.server.middleware import ASGIApp, Receive, Scope, Send, send_error


class ApiKeys:
    """The keys a server accepts; compare with :meth:`accepts`, never read them back."""

    __slots__ = ("_digests",)

    def __init__(self, keys: Collection[str]) -> None:
        cleaned = [key.strip() for key in keys if key.strip()]
        if not cleaned:
            raise ValueError("an API key list needs at least one non-empty key.")
        self._digests = tuple(_digest(key) for key in cleaned)

    def __len__(self) -> int:
        return len(self._digests)

    def __repr__(self) -> str:
        return f"ApiKeys(<{len(self)} key(s), hidden>)"

    def accepts(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header value carries one of the keys (``Bearer <key>``).

        Every key is compared, with no early exit, so the time does not tell which one
        (or how much of one) matched.
        """
        if not authorization:
            return False
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != AUTH_SCHEME.lower() or not token:
            return False
        offered = _digest(token)
        matched = False
        for digest in self._digests:
            matched |= hmac.compare_digest(digest, offered)
        return matched


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


def load_api_keys(key_file: str | None, environ: Mapping[str, str] = os.environ) -> ApiKeys | None:
    """The keys from ``key_file`` (one per line; ``#`` starts a comment) or else from
    :data:`API_KEY_ENV` (comma-separated); ``None`` when neither gives one.

    Raises ``ValueError`` when ``key_file`` cannot be read or holds no key: a server started
    with a key file meant to require keys, and must not start open by mistake.
    """
    if key_file is not None:
        try:
            with open(key_file, encoding="utf-8") as handle:
                lines = [line.split("#", 1)[0] for line in handle]
        except OSError as exc:
            raise ValueError(f"--api-key-file {key_file!r} cannot be read ({exc.strerror}).") from None
        if not any(line.strip() for line in lines):
            raise ValueError(f"--api-key-file {key_file!r} holds no key (one key per line).")
        return ApiKeys(lines)
    value = environ.get(API_KEY_ENV, "")
    keys = value.split(",")
    return ApiKeys(keys) if any(key.strip() for key in keys) else None


class RequireApiKey:
    """ASGI middleware: 401 ``unauthorized`` unless the request carries one of ``keys``.

    ``public_paths`` (``/health``, and ``/metrics`` with ``--metrics-public``) need no key:
    load balancers and the env's health checks poll ``/health`` without one.
    """

    def __init__(self, app: ASGIApp, keys: ApiKeys, public_paths: Collection[str]) -> None:
        self.app = app
        self.keys = keys
        self.public_paths = frozenset(public_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self.public_paths:
            await self.app(scope, receive, send)
            return
        authorization = None
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                authorization = value.decode("latin-1")
                break
        if self.keys.accepts(authorization):
            await self.app(scope, receive, send)
            return
        exc = UnauthorizedError(
            f"this server requires an API key: send the header 'Authorization: {AUTH_SCHEME} <key>' "
            "with a key the server accepts (the env's reward_model.api_key_env names the "
            "variable that holds it)."
        )
        # The body was not read: the connection cannot carry another request.
        await send_error(send, exc, headers=[(b"www-authenticate", AUTH_SCHEME.encode())], close=True)
