"""The server's exceptions and the one function that turns any exception into an HTTP error.

Every error leaves the server as ``{"error": {"type": ..., "message": ...}}`` with the status
below (the type -> status table itself is :data:`vlm_reward.protocol.ERROR_STATUS`, which
each exception class reads), so a client needs one code path for all failures:

======  ======================  =========================================================
status  type                    when
======  ======================  =========================================================
400     invalid_request         bad field value the schema cannot express (base64, kwargs
                                a backend rejects with ``ValueError``/``TypeError``), or a
                                body that cannot be parsed at all (not UTF-8, nested too deep)
400     invalid_video           the bytes are not a decodable video, or it has no frames
400     video_not_found         ``video_path`` is inside the root but no such file exists
401     unauthorized            the server has API keys and the request has no
                                ``Authorization: Bearer <key>`` header with one of them
403     video_outside_root      ``video_path`` resolves (``..``, symlinks) outside ``--video-root``
404     unknown_backend         no backend registered under that name (message lists them)
404     not_found               unknown URL
405     method_not_allowed      wrong HTTP method for a known URL
408     request_timeout         the request body did not arrive within
                                ``--body-timeout`` seconds
413     payload_too_large       inline video over ``--max-video-mb`` or request body too big
422     validation_error        the request does not match the schema (types, ranges, fields)
422     limit_exceeded          a field is above one of the server's ``--max-*`` caps
                                (:mod:`vlm_reward.server.limits`); the message names the cap's flag
499     client_disconnected     the client closed the connection before its score was ready;
                                its job was dropped, or stopped if it was already generating
                                (only the server log sees this)
500     inference_error         the backend failed while generating
500     internal_error          a bug in the server (details only in the server log)
502     parse_error             the model answered, but no score can be read from the answer;
                                502 because the upstream model, not the client, was wrong
502     no_answer_mass          score_mode probability: neither "yes" nor "no" has probability
                                mass among the log-probabilities the engine returned
503     backend_not_loaded      backend registered, but this server was not started with it
503     backend_loading         the backend is still loading (``/health`` turns 200 when done)
503     backend_load_failed     the backend failed to load; the message has the reason
503     self_testing            the backend loaded and is scoring its self-test (``--self-test``);
                                ``/health`` turns 200 when it passes
503     self_test_failed        the judge misjudged more of its self-test than
                                ``--self-test-tolerance``; the message names the cases (for good)
503     shutting_down           the server is draining (SIGTERM/SIGINT): new requests get this
                                at once, with ``Retry-After``; jobs still unfinished when
                                ``--drain-timeout`` ends get it too
503     server_busy             the request bodies in flight already use ``--max-inflight-mb``;
                                with ``Retry-After`` (nothing of the body was read)
======  ======================  =========================================================

Messages never carry stack traces, and text that comes from exceptions we did not write
(backends, libraries) has absolute paths replaced by ``<path>``, so a client never learns the
server's filesystem layout.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from vlm_reward.judging.probability import NoAnswerMassError
from vlm_reward.protocol import ERROR_STATUS

# Long messages (a model answer, a backend error) are cut so a runaway answer cannot turn
# every error response into megabytes.
MAX_MESSAGE_CHARS = 2000
_ABS_PATH = re.compile(r"(?<![\w.:/])/(?:[^\s/'\"()\[\]]+/)+[^\s/'\"()\[\],;:]*")
# FastAPI raises a bare 400 for a body it cannot parse at all (not UTF-8, nested too deep):
# that is the client's invalid request, reported under the documented type.
_HTTP_TYPES = {
    400: "invalid_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
}


class RewardServerError(Exception):
    """Base of the errors the server raises on purpose; the class fixes the type, the protocol the status."""

    status: ClassVar[int] = ERROR_STATUS["internal_error"]
    error_type: ClassVar[str] = "internal_error"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.status = ERROR_STATUS[cls.error_type]  # a type the protocol lacks fails at import

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRequestError(RewardServerError):
    error_type = "invalid_request"


class InvalidVideoError(RewardServerError):
    error_type = "invalid_video"


class VideoNotFoundError(RewardServerError):
    error_type = "video_not_found"


class VideoOutsideRootError(RewardServerError):
    error_type = "video_outside_root"


class UnknownBackendError(RewardServerError):
    error_type = "unknown_backend"


class PayloadTooLargeError(RewardServerError):
    error_type = "payload_too_large"


class LimitExceededError(RewardServerError):
    """A request field is above one of the server's caps (see :mod:`vlm_reward.server.limits`)."""

    error_type = "limit_exceeded"


class ClientDisconnectedError(RewardServerError):
    """The client went away before its answer; 499 is nginx's "client closed request"."""

    error_type = "client_disconnected"


class AnswerParseError(RewardServerError):
    error_type = "parse_error"


class BackendNotLoadedError(RewardServerError):
    error_type = "backend_not_loaded"


class BackendLoadingError(BackendNotLoadedError):
    error_type = "backend_loading"


class BackendLoadFailedError(BackendNotLoadedError):
    error_type = "backend_load_failed"


class SelfTestingError(BackendNotLoadedError):
    error_type = "self_testing"


class SelfTestFailedError(BackendNotLoadedError):
    error_type = "self_test_failed"


class ServerShuttingDownError(BackendNotLoadedError):
    error_type = "shutting_down"


class UnauthorizedError(RewardServerError):
    """No valid ``Authorization: Bearer <key>``; the message never echoes what was sent."""

    error_type = "unauthorized"


class ServerBusyError(RewardServerError):
    """Over the server's budget of requests or request bytes in flight; retry later."""

    error_type = "server_busy"


class RequestTimeoutError(RewardServerError):
    """The request body did not arrive within the body deadline."""

    error_type = "request_timeout"


class BackendError(Exception):
    """A backend's ``generate`` failed for a job; ``cause`` is what it raised or returned.

    The status is decided by :func:`error_response` from the cause: backends reject bad
    per-request ``backend_kwargs`` with ``ValueError``/``TypeError`` (the backend contract),
    which is the client's fault (400); anything else is an inference failure (500).
    """

    def __init__(self, backend: str, cause: BaseException) -> None:
        super().__init__(f"backend {backend!r} failed: {type(cause).__name__}")
        self.backend = backend
        self.cause = cause


def scrub(text: str) -> str:
    """``text`` with absolute paths replaced by ``<path>`` and cut to :data:`MAX_MESSAGE_CHARS`."""
    text = _ABS_PATH.sub("<path>", text)
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[:MAX_MESSAGE_CHARS] + "... (truncated)"
    return text


def error_body(error_type: str, message: str) -> dict[str, Any]:
    """The one error JSON shape."""
    return {"error": {"type": error_type, "message": message}}


def _typed(error_type: str, message: str) -> tuple[int, dict[str, Any]]:
    return ERROR_STATUS[error_type], error_body(error_type, message)


def _validation_message(errors: list[Any]) -> str:
    # Only the location and the reason: pydantic's "input" would echo the request back,
    # which for video_b64 can be megabytes.
    parts = []
    for err in errors:
        if err.get("type") == "json_invalid":
            parts.append("the request body is not valid JSON")
            continue
        loc = [str(p) for p in err.get("loc", ()) if p != "body"]
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        parts.append(f"{'.'.join(loc)}: {msg}" if loc else msg)
    return "invalid request: " + "; ".join(parts) + "."


def _backend_error(exc: BackendError) -> tuple[int, dict[str, Any]]:
    cause = exc.cause
    detail = scrub(str(cause)) or type(cause).__name__
    if isinstance(cause, NoAnswerMassError):  # the model's answer, like parse_error
        return _typed("no_answer_mass", f"backend {exc.backend!r} answered but {detail}")
    if isinstance(cause, ValueError | TypeError):
        return _typed("invalid_request", f"backend {exc.backend!r} rejected the request: {detail}")
    return _typed(
        "inference_error", f"inference failed in backend {exc.backend!r}: {type(cause).__name__}: {detail}"
    )


def error_response(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """Map any exception to ``(HTTP status, error JSON)``; the only place statuses are chosen.

    Unknown exceptions are server bugs: they become a 500 ``internal_error`` whose message
    says nothing about the exception (the server logs the traceback instead).
    """
    if isinstance(exc, RewardServerError):
        return exc.status, error_body(exc.error_type, scrub(exc.message))
    if isinstance(exc, BackendError):
        return _backend_error(exc)
    if isinstance(exc, RequestValidationError | ValidationError):
        return _typed("validation_error", scrub(_validation_message(list(exc.errors()))))
    if isinstance(exc, StarletteHTTPException):
        error_type = _HTTP_TYPES.get(exc.status_code, "http_error")
        return exc.status_code, error_body(error_type, scrub(str(exc.detail)))
    return _typed("internal_error", "internal server error; the server log has the details.")
