"""``GET /metrics``: what an operator needs to see before episodes start falling back.

Prometheus text format, written by ``prometheus_client`` (one registry per app, so two
servers in one test process never share counts). The series:

- ``vlm_reward_requests_total{route,status,backend,error_type}``: every answered request;
- ``vlm_reward_queue_wait_seconds``, ``vlm_reward_video_decode_seconds``,
  ``vlm_reward_model_seconds`` (histograms, by backend): where a ``/score`` spent its time;
- ``vlm_reward_jobs_queued`` / ``vlm_reward_jobs_running`` (gauges, by backend);
- ``vlm_reward_prompt_tokens_total`` / ``vlm_reward_generated_tokens_total`` (counters, by
  backend): the tokens the model read and wrote, as the backend counted them
  (:class:`~vlm_reward.backends.base.TokenUsage`; a backend that cannot count adds 0);
- ``vlm_reward_jobs_aborted_total{backend,reason}``: jobs stopped because the client left
  (``client_disconnected``) or the server stopped (``shutting_down``);
- ``vlm_reward_backend_state{backend,state}``: 1 for the backend's current state;
- ``vlm_reward_draining``: 1 while a SIGTERM drain runs;
- ``vlm_reward_build_info{version,backend,model}``.

Every label value comes from a closed set (the routes below, the hosted backends, the
protocol's error types, the statuses the server sends), so a client probing made-up paths
or backend names cannot grow the number of series.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable
from typing import Any

from vlm_reward.protocol import ERROR_STATUS
from vlm_reward.server.middleware import ASGIApp, Message, Receive, Scope, Send

ROUTES = ("/score", "/health", "/backends", "/metrics")
OTHER = "other"
NO_BACKEND = "-"
NO_ERROR = "none"
BACKEND_STATES = ("loading", "self_testing", "ready", "failed", "self_test_failed")
# Seconds: a probability judgement takes tens of milliseconds, a PRIMO-R1 reasoning minutes.
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
_ERROR_BODY_CAP = 8192  # an error body is small JSON; never buffer a large response


def _prometheus() -> Any:
    try:
        import prometheus_client
    except ImportError:
        raise ImportError(
            "GET /metrics needs prometheus-client: pip install 'prometheus-client==0.26.0'"
        ) from None
    return prometheus_client


class ServerMetrics:
    """The server's series in a registry of its own; label values are checked against closed sets."""

    def __init__(self, backends: Collection[str], model: str, version: str) -> None:
        prom = _prometheus()
        self._prom = prom
        self.registry = prom.CollectorRegistry(auto_describe=True)
        self.backends = frozenset(backends)
        reg = self.registry
        self.requests = prom.Counter(
            "vlm_reward_requests",
            "Requests answered, by route, status, backend and error type (401s, 413s and 503s included).",
            ["route", "status", "backend", "error_type"],
            registry=reg,
        )
        hist = {"labelnames": ["backend"], "buckets": _BUCKETS, "registry": reg}
        self.queue_wait = prom.Histogram(
            "vlm_reward_queue_wait_seconds",
            "From submit to the start of generation (waiting for a batch).",
            **hist,
        )
        self.decode = prom.Histogram(
            "vlm_reward_video_decode_seconds", "Reading and checking the video.", **hist
        )
        self.model_time = prom.Histogram("vlm_reward_model_seconds", "Generation, start to answer.", **hist)
        self.queued = prom.Gauge(
            "vlm_reward_jobs_queued",
            "Jobs waiting for a batch (0 on vLLM, whose engine takes each job at once).",
            ["backend"],
            registry=reg,
        )
        self.running = prom.Gauge(
            "vlm_reward_jobs_running",
            "Jobs generating (on vLLM, the engine's own queue included).",
            ["backend"],
            registry=reg,
        )
        self.prompt_tokens = prom.Counter(
            "vlm_reward_prompt_tokens",
            "Prompt tokens the judge read (text and video), as the backend counted them.",
            ["backend"],
            registry=reg,
        )
        self.generated_tokens = prom.Counter(
            "vlm_reward_generated_tokens",
            "Tokens generated (1 per judgement read from the logits).",
            ["backend"],
            registry=reg,
        )
        self.aborted = prom.Counter(
            "vlm_reward_jobs_aborted",
            "Jobs stopped before their answer: the client left (client_disconnected) or the server "
            "stopped (shutting_down).",
            ["backend", "reason"],
            registry=reg,
        )
        self.backend_state = prom.Gauge(
            "vlm_reward_backend_state",
            "1 for the backend's state (loading, ready, failed).",
            ["backend", "state"],
            registry=reg,
        )
        self.draining = prom.Gauge("vlm_reward_draining", "1 while a SIGTERM drain runs.", registry=reg)
        self.build_info = prom.Info("vlm_reward_build", "What this server runs.", registry=reg)
        self.build_info.info({"version": version, "backend": ",".join(sorted(self.backends)), "model": model})

    def backend_label(self, backend: str | None) -> str:
        """``backend`` if this server hosts it, else ``-`` (a made-up name adds no series)."""
        return backend if backend in self.backends else NO_BACKEND

    def watch_runners(self, runners: Callable[[], Iterable[tuple[str, Any, str]]]) -> None:
        """Read queue depth and state from ``runners()`` (name, runner or ``None``, state) at scrape time."""

        def collect(attr: str) -> Callable[[], None]:
            def update() -> None:
                for name, runner, _ in runners():
                    gauge = self.queued if attr == "queued" else self.running
                    gauge.labels(name).set(getattr(runner, attr, 0) if runner is not None else 0)

            return update

        self._refresh = [collect("queued"), collect("running"), lambda: self._states(runners())]

    def _states(self, runners: Iterable[tuple[str, Any, str]]) -> None:
        for name, _, state in runners:
            for known in BACKEND_STATES:
                self.backend_state.labels(name, known).set(1.0 if known == state else 0.0)

    def exposition(self) -> tuple[bytes, str]:
        """(body, content type) of a scrape, with the gauges read now."""
        for refresh in getattr(self, "_refresh", ()):
            refresh()
        return self._prom.generate_latest(self.registry), self._prom.CONTENT_TYPE_LATEST

    def observe_request(self, path: str, status: int, backend: str | None, error_type: str | None) -> None:
        """Count one answered request, every label from its closed set."""
        route = path if path in ROUTES else OTHER
        kind = error_type if error_type in ERROR_STATUS else (NO_ERROR if error_type is None else OTHER)
        code = str(status) if 100 <= status <= 599 else OTHER
        self.requests.labels(route, code, self.backend_label(backend), kind).inc()


class MetricsMiddleware:
    """ASGI middleware: counts every request by route, status, backend and error type.

    The error type is read from the error body (the protocol's one shape), so a 401 sent by
    the key check or a 413 sent before routing is counted like any other.
    """

    def __init__(self, app: ASGIApp, metrics: ServerMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        error_body: list[bytes] = []

        async def observe(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif (
                message["type"] == "http.response.body"
                and status >= 400
                and sum(map(len, error_body)) < _ERROR_BODY_CAP
            ):
                error_body.append(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, observe)
        finally:
            error_type = _error_type(b"".join(error_body)) if status >= 400 else None
            if error_type is None and status >= 400:
                error_type = OTHER
            backend = scope.get("state", {}).get("backend")
            self.metrics.observe_request(scope.get("path", ""), status, backend, error_type)


def _error_type(body: bytes) -> str | None:
    try:
        error = json.loads(body)["error"]["type"]
    except (ValueError, KeyError, TypeError):
        return None
    return error if isinstance(error, str) else None
