"""One ``POST /score`` to one reward server, and what its failure means.

:class:`RewardRequestError` groups failures by ``kind`` (the server's error type, e.g.
``parse_error``, or ``connection``, ``timeout``, ``malformed_response``, ``invalid_score``);
:func:`fails_over` and :func:`worth_retrying` say which of them another replica, or another
attempt, may not share. The client (:mod:`vlm_reward.client.scoring`) decides
what to do with them.
"""

from __future__ import annotations

import json
from typing import Any

import requests
import urllib3
from pydantic import ValidationError

from vlm_reward.protocol import RETRYABLE_STATUSES, ScoreResponse


class RewardRequestError(RuntimeError):
    """A scoring call failed; ``kind`` groups errors for warnings and metrics."""

    def __init__(self, kind: str, endpoint: str, message: str, status: int | None = None) -> None:
        where = f"{endpoint} (HTTP {status})" if status is not None else endpoint
        super().__init__(f"VLM reward request to {where} failed [{kind}]: {message}")
        self.kind, self.endpoint, self.status, self.reason = kind, endpoint, status, message


class RewardAuthError(RewardRequestError):
    """A replica answered 401: the key is missing or wrong. A configuration error, never a judgement.

    Every replica of a pool shares its keys and every attempt sends the same key, so it is
    neither failed over nor retried, and no fallback score stands in for it: the client raises
    it whatever ``fail_on_request_error`` says. The message names the variable the client read
    the key from (``api_key_env``), or says it sent none.
    """

    def __init__(self, endpoint: str, message: str, api_key_env: str | None) -> None:
        super().__init__("unauthorized", endpoint, message, 401)
        sent = f"the key in ${api_key_env}" if api_key_env else "no key (no api_key_env is set)"
        self.args = (
            f"the reward server at {endpoint} refused the request with HTTP 401 (unauthorized): "
            f"this client sent {sent}; give it the variable that holds a key the server accepts "
            "(reward_model.api_key_env, or --api-key-env of the evaluation commands).",
        )
        self.api_key_env = api_key_env


def post_score(
    session: requests.Session,
    endpoint: str,
    payload: dict[str, Any],
    timeout: float,
    ca_bundle: str | None = None,
) -> ScoreResponse:
    """One ``POST /score`` to ``endpoint``: the validated response, or :class:`RewardRequestError`.

    ``ca_bundle`` verifies an https endpoint. It is passed per request because ``requests``
    lets ``REQUESTS_CA_BUNDLE`` override a session's ``verify``.
    """
    verify: str | bool = True if ca_bundle is None else ca_bundle
    try:
        response = session.post(endpoint, json=payload, timeout=timeout, verify=verify)
    except requests.Timeout as exc:
        raise RewardRequestError("timeout", endpoint, f"no answer within {timeout} s") from exc
    except requests.ConnectionError as exc:
        if _is_read_timeout(exc):  # the body stalled: a timeout, not retried (it would stall again)
            message = f"no answer within {timeout} s"
            raise RewardRequestError("timeout", endpoint, message) from exc
        raise RewardRequestError("connection", endpoint, _short(exc)) from exc
    except requests.RequestException as exc:
        raise RewardRequestError("connection", endpoint, _short(exc)) from exc
    try:
        body = _strict_json(response.content)
    except ValueError as exc:
        message = f"body is not JSON: {response.text[:200]!r}"
        raise RewardRequestError("malformed_response", endpoint, message, response.status_code) from exc
    if response.status_code != 200:
        kind, message = _server_error(body)
        raise RewardRequestError(kind, endpoint, message, response.status_code)
    return _validated(body, endpoint)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _strict_json(content: bytes) -> Any:
    """The body as JSON by the spec: ``NaN`` and ``Infinity`` are not JSON, so they make a
    malformed response whichever JSON library ``requests`` would pick (simplejson refuses
    them, the standard library's default accepts them)."""
    return json.loads(content, parse_constant=_reject_constant)


def fails_over(exc: RewardRequestError) -> bool:
    """Whether another replica may answer where this one failed: it was unreachable, slow or busy.

    Not a 401: the replicas of one pool share their keys, so a rejected key is the client's.
    """
    return exc.kind in ("connection", "timeout") or exc.status in RETRYABLE_STATUSES


def worth_retrying(exc: RewardRequestError) -> bool:
    """Whether the same request may succeed later: the server was unreachable or busy.

    A timeout is not retried (the request would stall again), nor a 4xx or a parse error.
    """
    return exc.kind == "connection" or exc.status in RETRYABLE_STATUSES


def _validated(body: Any, endpoint: str) -> ScoreResponse:
    """``body`` as a :class:`ScoreResponse`; a bad score is ``invalid_score``, anything else malformed."""
    if not isinstance(body, dict) or "score" not in body:
        message = f"no 'score' in the response: {str(body)[:200]}"
        raise RewardRequestError("malformed_response", endpoint, message)
    try:
        return ScoreResponse.model_validate(body)
    except ValidationError as exc:
        score_errors = [e["type"] for e in exc.errors() if e["loc"] == ("score",)]
        if score_errors:
            problem = "is not a number" if score_errors[0] == "float_type" else "is not in [0, 1]"
            raise RewardRequestError("invalid_score", endpoint, f"score {body['score']!r} {problem}") from exc
        fields = ", ".join(".".join(map(str, e["loc"])) for e in exc.errors())
        message = f"the response does not match the protocol ({fields}): {str(body)[:200]}"
        raise RewardRequestError("malformed_response", endpoint, message) from exc


def _server_error(body: Any) -> tuple[str, str]:
    """(kind, message) of an error body in the server's ``{"error": {type, message}}`` shape."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        kind = str(body["error"].get("type") or "http_error")
        return kind, f"{kind}: {body['error'].get('message', '')}"
    return "http_error", str(body)[:200]


def _is_read_timeout(exc: requests.ConnectionError) -> bool:
    """Whether ``exc`` is a stalled response body.

    ``requests`` raises ``Timeout`` only while waiting for the status line and headers; a
    body that stops arriving for ``timeout`` seconds surfaces as a ``ConnectionError``
    wrapping urllib3's ``ReadTimeoutError``.
    """
    return any(isinstance(arg, urllib3.exceptions.ReadTimeoutError) for arg in exc.args)


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 200 else text[:200] + "..."
