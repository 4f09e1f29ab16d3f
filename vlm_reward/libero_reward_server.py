"""HTTP reward server: ``POST /score``, ``GET /health``, ``GET /backends`` (DESIGN.md section 7).

Layout, outside in: two small ASGI middlewares (request log, body-size limit), thin
FastAPI routes, and :class:`RewardService`, which holds the logic: resolve the backend,
validate the video (:mod:`vlm_reward.video_source`), queue the job on the backend's
:class:`~vlm_reward.batching.DynamicBatcher`, parse the answer
(:func:`vlm_reward.parsing.parse_score`). Every error goes through
:func:`vlm_reward.errors.error_response`, so all of them share one JSON shape.

The backend is constructed when the app is created (cheap; bad ``--backend-kwargs`` fail
at the command line) and loaded in a background thread at startup, so ``/health``
answers 503 while the weights load and 200 once the backend serves.

Run ``python -m vlm_reward.libero_reward_server --help`` for the command line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from vlm_reward.backends import (
    ScoreJob,
    available_backends,
    backend_aliases,
    canonical_name,
    resolve_backend,
)
from vlm_reward.batching import DynamicBatcher
from vlm_reward.errors import (
    AnswerParseError,
    BackendError,
    BackendLoadFailedError,
    BackendLoadingError,
    BackendNotLoadedError,
    ClientDisconnectedError,
    PayloadTooLargeError,
    RewardServerError,
    UnknownBackendError,
    error_response,
    scrub,
)
from vlm_reward.parsing import ParsedScore, ScoreParseError, parse_score
from vlm_reward.schemas import BackendsResponse, HealthResponse, ScoreRequest, ScoreResponse
from vlm_reward.video_source import VideoPolicy, prepare_video

logger = logging.getLogger("vlm_reward.server")

DEFAULT_BACKEND = "qwen2_5_vl_vllm"
DEFAULT_PORT = 18080
DEFAULT_MAX_VIDEO_MB = 32.0
# The JSON around a video (task text, kwargs) is small; 1 MiB of slack on top of the
# base64-inflated video limit keeps the body limit from rejecting what the video limit allows.
_BODY_SLACK_BYTES = 1024 * 1024

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class ServerConfig:
    """Everything the server is started with (the CLI flags, validated)."""

    backend: str
    model: str
    backend_kwargs: dict[str, Any] = field(default_factory=dict)
    video_root: str = field(default_factory=tempfile.gettempdir)
    max_batch_size: int = 8
    max_wait_ms: float = 20.0
    max_video_mb: float = DEFAULT_MAX_VIDEO_MB

    @property
    def max_body_bytes(self) -> int:
        """Largest request body: the video limit after base64 (4/3) plus JSON slack."""
        return int(self.max_video_mb * 1024 * 1024 * 4 / 3) + _BODY_SLACK_BYTES


def model_display_name(model: str) -> str:
    """What responses call the model: a local checkpoint's directory name, else the id as given.

    Responses must not reveal host paths, and the directory name is what people call it.
    """
    if os.path.isabs(model):
        return os.path.basename(os.path.normpath(model)) or model
    return model


class BackendSlot:
    """One hosted backend: its instance, load state and batcher.

    ``state`` goes ``loading`` -> ``ready`` or ``failed``; it is written by the loader
    thread and read by request handlers (single attribute writes, and the batcher is set
    before the state says ``ready``).
    """

    def __init__(self, name: str, backend: Any, config: ServerConfig) -> None:
        self.name = name
        self.backend = backend
        self.model = model_display_name(config.model)
        self.state = "loading"
        self.error: str | None = None
        self.batcher: DynamicBatcher[Any, str] | None = None
        self._config = config
        self._closing = False

    def load(self) -> None:
        """Load the weights (slow) and start the batcher; failures are recorded, not raised."""
        start = time.perf_counter()
        try:
            self.backend.load()
        except Exception as exc:
            logger.exception("backend %r failed to load", self.name)
            self.error = f"{type(exc).__name__}: {scrub(str(exc))}"
            self.state = "failed"
            return
        if self._closing:  # the server stopped while the weights loaded
            with contextlib.suppress(Exception):
                self.backend.close()
            return
        self.batcher = DynamicBatcher(
            self.backend.generate,
            max_batch_size=self._config.max_batch_size,
            max_wait_ms=self._config.max_wait_ms,
            name=self.name,
        )
        self.state = "ready"
        logger.info("backend %r loaded in %.1f s", self.name, time.perf_counter() - start)

    def require_ready(self) -> DynamicBatcher[Any, str]:
        """The batcher, or ``BackendNotLoadedError`` saying why there is none yet."""
        if self.state == "ready" and self.batcher is not None:
            return self.batcher
        if self.state == "failed":
            raise BackendLoadFailedError(f"backend {self.name!r} failed to load: {self.error}")
        raise BackendLoadingError(
            f"backend {self.name!r} is still loading; retry when GET /health returns 200."
        )

    def close(self) -> None:
        """Finish queued jobs, then release the model."""
        self._closing = True
        if self.batcher is not None:
            self.batcher.close()
        with contextlib.suppress(Exception):
            self.backend.close()


class RewardService:
    """The server's logic, independent of the HTTP framework; one per app."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.default_backend = canonical_name(config.backend)
        backend = resolve_backend(self.default_backend)(config.model, **config.backend_kwargs)
        self.slots = {self.default_backend: BackendSlot(self.default_backend, backend, config)}
        self.video_policy = VideoPolicy.create(config.video_root, config.max_video_mb)
        self._loader: threading.Thread | None = None

    def start(self) -> None:
        """Begin loading the backends in the background so ``/health`` answers meanwhile."""
        slots = list(self.slots.values())
        self._loader = threading.Thread(
            target=lambda: [slot.load() for slot in slots], name="backend-loader", daemon=True
        )
        self._loader.start()

    def shutdown(self) -> None:
        """Release every backend (queued jobs are finished first)."""
        for slot in self.slots.values():
            slot.close()

    def slot_for(self, requested: str | None) -> BackendSlot:
        """The hosted slot for a requested name or alias (``None``: the default)."""
        if requested is None:
            return self.slots[self.default_backend]
        try:
            name = canonical_name(requested)
        except ValueError:
            raise UnknownBackendError(
                f"unknown backend {requested!r}; valid names: {', '.join(available_backends())}."
            ) from None
        if name not in self.slots:
            raise BackendNotLoadedError(
                f"backend {name!r} is registered but this server did not load it (it serves "
                f"{self.default_backend!r}); start a server with --backend {name}."
            )
        return self.slots[name]

    async def score(
        self, req: ScoreRequest, request_state: Any = None, client_gone: asyncio.Future[Any] | None = None
    ) -> ScoreResponse:
        """Score one request end to end; raises the errors :func:`error_response` maps.

        ``client_gone`` resolves when the client disconnects; a job still queued then is
        dropped (``ClientDisconnectedError``), so a client that timed out does not keep the
        model busy for nobody while later requests wait behind it.
        """
        start = time.perf_counter()
        slot = self.slot_for(req.backend)
        if request_state is not None:
            request_state.backend = slot.name
        batcher = slot.require_ready()
        video = await asyncio.to_thread(prepare_video, req.video_path, req.video_b64, self.video_policy)
        try:
            text = await self._generate(slot, batcher, req, video.path, client_gone)
        finally:
            video.cleanup()
        mode = req.score_mode or slot.backend.default_score_mode
        parsed = _parse_answer(text, mode, slot.name)
        return ScoreResponse(
            score=parsed.score,
            raw_value=parsed.raw_value,
            answer=parsed.answer,
            think=parsed.think,
            backend=slot.name,
            model=slot.model,
            latency_s=round(time.perf_counter() - start, 6),
        )

    async def _generate(
        self,
        slot: BackendSlot,
        batcher: DynamicBatcher[Any, str],
        req: ScoreRequest,
        path: str,
        client_gone: asyncio.Future[Any] | None,
    ) -> str:
        job = ScoreJob(
            task_text=req.task_text,
            video_path=path,
            nframes=req.nframes,
            max_pixels=req.max_pixels,
            video_fps=req.video_fps,
            backend_kwargs=dict(req.backend_kwargs),
        )
        try:
            text = await _unless_gone(asyncio.wrap_future(batcher.submit(job)), client_gone)
        except ClientDisconnectedError:
            raise
        except Exception as exc:
            raise BackendError(slot.name, exc) from exc
        if not isinstance(text, str):
            raise BackendError(slot.name, RuntimeError(f"generate returned {type(text).__name__}, not str"))
        return text

    def health(self) -> tuple[int, dict[str, Any]]:
        """200 with the serving backend once it is ready; 503 with the reason (loading/failed) before."""
        slot = self.slots[self.default_backend]
        try:
            slot.require_ready()
        except BackendNotLoadedError as exc:
            return error_response(exc)
        body = HealthResponse(backend=slot.name, model=slot.model, max_batch_size=self.config.max_batch_size)
        return 200, body.model_dump()

    def backends(self) -> BackendsResponse:
        """Registered names and aliases, and what this server hosts."""
        aliases = backend_aliases()
        return BackendsResponse(
            default=self.default_backend,
            backends=sorted(aliases),
            aliases=aliases,
            loaded=[name for name, slot in self.slots.items() if slot.state == "ready"],
            states={name: slot.state for name, slot in self.slots.items()},
        )


async def _unless_gone(result: asyncio.Future[str], client_gone: asyncio.Future[Any] | None) -> str:
    """``result``'s value, unless the client disconnects first.

    Then ``result`` is cancelled, which cancels the batcher's future: a job whose batch has
    not started is never sent to the model (one already running finishes unread).
    """
    if client_gone is None:
        return await result
    await asyncio.wait({result, client_gone}, return_when=asyncio.FIRST_COMPLETED)
    if result.done():
        return result.result()
    result.cancel()
    raise ClientDisconnectedError("the client disconnected before its score was ready; its job was dropped.")


async def _wait_for_disconnect(receive: Receive) -> None:
    """Return once the client has disconnected.

    Called after the body was read (``BodySizeLimit`` reads all of it), so the server's next
    message is the disconnect. A failing receive channel means the connection is unusable,
    which counts as gone too.
    """
    try:
        while (await receive())["type"] != "http.disconnect":
            pass
    except Exception:
        return


def _parse_answer(text: str, mode: str, backend: str) -> ParsedScore:
    """The parsed answer, or ``AnswerParseError`` (502) carrying the answer text."""
    try:
        return parse_score(text, mode)
    except ScoreParseError as exc:
        raise AnswerParseError(
            f"backend {backend!r} answered but no score could be read ({exc}) "
            f"with score_mode={mode!r}; full answer: {text!r}"
        ) from None


def error_json(exc: BaseException) -> JSONResponse:
    """The HTTP response for any exception (via the one mapping function)."""
    status, body = error_response(exc)
    # The client gets a scrubbed one-liner; the operator gets the traceback here. (Unknown
    # exceptions are not logged here: Starlette re-raises them and uvicorn logs them.)
    if isinstance(exc, BackendError) and status >= 500:
        logger.error("%s", body["error"]["message"], exc_info=exc.cause)
    elif isinstance(exc, AnswerParseError):  # the answer is worth seeing when tuning prompts
        logger.warning("%s", body["error"]["message"])
    return JSONResponse(body, status_code=status)


class BodySizeLimit:
    """ASGI middleware: 413 for request bodies over ``max_bytes``, chunked or not.

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
    """ASGI middleware: one log line per request with backend, status and latency.

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


def create_app(config: ServerConfig) -> FastAPI:
    """The FastAPI app for ``config``; the backend starts loading when the app starts.

    Raises ``ValueError``/``TypeError`` for a bad backend name, backend kwargs or video
    root, so a misconfiguration fails before the server listens.
    """
    service = RewardService(config)

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
    _add_routes(app, service)
    app.add_middleware(BodySizeLimit, max_bytes=config.max_body_bytes)
    app.add_middleware(RequestLog)  # added last = outermost, so it also logs 413s
    return app


async def _handle_exception(request: Request, exc: Exception) -> JSONResponse:
    return error_json(exc)


def _add_routes(app: FastAPI, service: RewardService) -> None:
    @app.post("/score", response_model=ScoreResponse, responses={400: {}, 403: {}, 404: {}, 413: {}})
    async def score(body: ScoreRequest, request: Request) -> ScoreResponse:
        client_gone = asyncio.ensure_future(_wait_for_disconnect(request.receive))
        try:
            return await service.score(body, request.state, client_gone)
        finally:
            client_gone.cancel()

    @app.get("/health", response_model=HealthResponse, responses={503: {}})
    async def health() -> JSONResponse:
        status, body = service.health()
        return JSONResponse(body, status_code=status)

    @app.get("/backends", response_model=BackendsResponse)
    async def backends() -> BackendsResponse:
        return service.backends()


# ---------------------------------------------------------------------------- command line


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _port(text: str) -> int:
    value = _positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"expected a port in 1..65535, got {text!r}")
    return value


def _float_at_least(minimum: float, strict: bool) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not (value > minimum if strict else value >= minimum) or value == float("inf"):
            bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
            raise argparse.ArgumentTypeError(f"expected a finite number {bound}, got {text!r}")
        return value

    return parse


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc.msg}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object like '{{\"key\": 1}}', got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The command line (documented in ``--help``)."""
    p = argparse.ArgumentParser(
        prog="python -m vlm_reward.libero_reward_server",
        description="Serve POST /score: judge LIBERO episode videos with a video VLM.",
    )
    p.add_argument("--backend", default=DEFAULT_BACKEND, help="backend name or alias (see GET /backends)")
    p.add_argument("--model", required=True, help="model path or id passed to the backend")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default: %(default)s)")
    p.add_argument("--port", type=_port, default=DEFAULT_PORT, help="port (default: %(default)s)")
    p.add_argument(
        "--video-root",
        default=tempfile.gettempdir(),
        help="video_path must resolve inside this directory (default: %(default)s)",
    )
    p.add_argument("--backend-kwargs", type=_json_object, default={}, help="JSON object for the backend")
    p.add_argument("--max-batch-size", type=_positive_int, default=8, help="jobs per generate call")
    p.add_argument(
        "--max-wait-ms", type=_float_at_least(0, strict=False), default=20.0, help="batch collection window"
    )
    p.add_argument(
        "--max-video-mb",
        type=_float_at_least(0, strict=True),
        default=DEFAULT_MAX_VIDEO_MB,
        help="largest video accepted, inline or by path (default: %(default)s)",
    )
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first so the backends it registers can be used (repeatable)",
    )
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return p


def parse_config(argv: Sequence[str] | None = None) -> tuple[ServerConfig, argparse.Namespace]:
    """Parse and validate the command line; exits with an argparse error on bad values."""
    parser = build_parser()
    args = parser.parse_args(argv)
    for module in args.plugin:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            parser.error(f"--plugin {module}: cannot import it ({exc}).")
    try:
        canonical_name(args.backend)
    except ValueError as exc:
        parser.error(f"--backend: {exc}")
    if not os.path.isdir(args.video_root):
        parser.error(f"--video-root {args.video_root!r} is not an existing directory.")
    config = ServerConfig(
        backend=args.backend,
        model=args.model,
        backend_kwargs=args.backend_kwargs,
        video_root=args.video_root,
        max_batch_size=args.max_batch_size,
        max_wait_ms=args.max_wait_ms,
        max_video_mb=args.max_video_mb,
    )
    return config, args


def main(argv: Sequence[str] | None = None) -> None:
    """Run the server until interrupted (SIGINT/SIGTERM shut it down cleanly)."""
    import uvicorn

    config, args = parse_config(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        app = create_app(config)
    except (ValueError, TypeError) as exc:
        build_parser().error(f"--backend-kwargs for {config.backend!r} rejected: {exc}")
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)


if __name__ == "__main__":
    main()
