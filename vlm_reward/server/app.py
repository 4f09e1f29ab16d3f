"""The reward server's FastAPI app: routes, the one exception handler, and the lifespan.

Outside in: :class:`~vlm_reward.server.middleware.RequestLog`, then
:class:`~vlm_reward.server.metrics.MetricsMiddleware` (so it counts every status, 401 and 413
included), :class:`~vlm_reward.server.auth.RequireApiKey` (when the server has keys), then
:class:`~vlm_reward.server.middleware.BodySizeLimit`, then thin routes that hand each request to
:class:`~vlm_reward.server.service.RewardService`. A 503 carries ``Retry-After``. Every error, raised
anywhere, leaves through :func:`error_json`, so all of them share the one JSON shape of
:mod:`vlm_reward.errors`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from vlm_reward import __version__
from vlm_reward.errors import AnswerParseError, BackendError, RewardServerError, error_response
from vlm_reward.protocol import (
    ERROR_STATUS,
    BackendsResponse,
    ErrorResponse,
    HealthResponse,
    ScoreRequest,
    ScoreResponse,
)
from vlm_reward.server.auth import RequireApiKey
from vlm_reward.server.config import ServerConfig
from vlm_reward.server.metrics import MetricsMiddleware, ServerMetrics
from vlm_reward.server.middleware import BodySizeLimit, Receive, RequestLog
from vlm_reward.server.service import RewardService

logger = logging.getLogger("vlm_reward.server")
RETRY_AFTER_S = "1"


def create_app(config: ServerConfig) -> FastAPI:
    """The FastAPI app for ``config``; the backend starts loading when the app starts.

    Raises ``ValueError``/``TypeError`` for a bad backend name, backend kwargs, video root
    or a default generation budget above ``--max-new-tokens``, so a misconfiguration fails
    before the server listens. ``app.state.service`` is the :class:`RewardService`.
    """
    service = RewardService(config)
    metrics = None
    if config.metrics:
        metrics = ServerMetrics(service.slots, service.slots[service.default_backend].model, __version__)
        metrics.watch_runners(service.runner_states)
        service.metrics = metrics

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.start()
        yield
        await asyncio.to_thread(service.shutdown)

    app = FastAPI(title="LIBERO VLM reward server", lifespan=lifespan)
    app.state.service = service
    handled = (RewardServerError, BackendError, RequestValidationError, StarletteHTTPException, Exception)
    for exc_type in handled:
        app.add_exception_handler(exc_type, _handle_exception)
    _add_routes(app, service, with_metrics=metrics is not None)
    app.add_middleware(
        BodySizeLimit,
        max_bytes=config.max_body_bytes,
        budget_bytes=config.max_inflight_bytes,
        body_timeout_s=config.body_timeout_s,
    )
    if config.api_keys is not None:
        public = ("/health", "/metrics") if config.metrics_public else ("/health",)
        app.add_middleware(RequireApiKey, keys=config.api_keys, public_paths=public)
    if metrics is not None:
        app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_middleware(RequestLog)  # added last = outermost, so it also logs 413s
    return app


def error_json(exc: BaseException) -> JSONResponse:
    """The HTTP response for any exception (via the one mapping function)."""
    status, body = error_response(exc)
    # The client gets a scrubbed one-liner; the operator gets the traceback here. (Unknown
    # exceptions are not logged here: Starlette re-raises them and Hypercorn logs them.)
    if isinstance(exc, BackendError) and status >= 500:
        logger.error("%s", body["error"]["message"], exc_info=exc.cause)
    elif isinstance(exc, AnswerParseError):  # the answer is worth seeing when tuning prompts
        logger.warning("%s", body["error"]["message"])
    # 503 means "not now": say when to come back (drains and busy servers clear in seconds).
    headers = {"Retry-After": RETRY_AFTER_S} if status == 503 else None
    return JSONResponse(body, status_code=status, headers=headers)


async def _handle_exception(request: Request, exc: Exception) -> JSONResponse:
    return error_json(exc)


async def _wait_for_disconnect(receive: Receive) -> None:
    """Return once the client has disconnected.

    Called after the body was read (``BodySizeLimit`` reads all of it), so the server's next
    message is the disconnect. A failing receive channel means the connection is unusable,
    which counts as gone too.
    """
    try:
        while (await receive())["type"] != "http.disconnect":
            pass
    except Exception as exc:
        logger.debug("receive channel failed (%s); treating the client as gone", type(exc).__name__)


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of a route that can fail with ``statuses``: the one error shape,
    each status described by the error types it carries (:data:`~vlm_reward.protocol.ERROR_STATUS`)."""
    return {
        status: {
            "model": ErrorResponse,
            "description": ", ".join(kind for kind, code in ERROR_STATUS.items() if code == status),
        }
        for status in statuses
    }


def _add_routes(app: FastAPI, service: RewardService, with_metrics: bool) -> None:
    keyed = (401,) if service.config.api_keys is not None else ()
    score_errors = error_responses(400, *keyed, 403, 404, 408, 413, 422, 500, 502, 503)

    @app.post("/score", response_model=ScoreResponse, responses=score_errors)
    async def score(body: ScoreRequest, request: Request) -> ScoreResponse:
        """Judge one episode video against its task text: a score in [0, 1] and what it was read from.

        The video is ``video_path`` (inside the server's ``--video-root``) or ``video_b64``, exactly one.
        A client that disconnects has its job dropped, or stopped if it is generating (logged as 499).
        """
        client_gone = asyncio.ensure_future(_wait_for_disconnect(request.receive))
        try:
            return await service.score(
                body, client_gone, on_backend=partial(setattr, request.state, "backend")
            )
        finally:
            client_gone.cancel()

    @app.get("/health", response_model=HealthResponse, responses=error_responses(503))
    async def health() -> JSONResponse:
        """200 once the default backend is loaded; 503 before, after a failed load and while draining.

        Public even when the server has API keys. The body names the backend, the model and the
        server's per-request caps (``limits``), so a client can check that its requests fit.
        """
        status, body = service.health()
        headers = {"Retry-After": RETRY_AFTER_S} if status == 503 else None
        return JSONResponse(body, status_code=status, headers=headers)

    if with_metrics and service.metrics is not None:
        scraped = service.metrics
        scrape = {200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}}
        scrape |= error_responses() if service.config.metrics_public else error_responses(*keyed)

        @app.get("/metrics", response_class=Response, responses=scrape)
        async def metrics() -> Response:
            """The server's Prometheus series: needs the key unless ``--metrics-public``; absent with
            ``--no-metrics``."""
            body, content_type = scraped.exposition()
            return Response(body, media_type=content_type)

    @app.get("/backends", response_model=BackendsResponse, responses=error_responses(*keyed))
    async def backends() -> BackendsResponse:
        """The registered backends and their aliases, and which this server hosts and has loaded."""
        return service.backends()
