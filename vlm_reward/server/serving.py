"""Run the app on Hypercorn, with its connection deadlines, TLS and the SIGTERM drain.

Why Hypercorn and not uvicorn: uvicorn (0.54) starts its keep-alive timer only after a
response, so a connection that never finishes its request headers is held as long as the
client likes (measured: 3,000 idle and 1,500 one-header-line-a-second connections, all
held). Hypercorn (0.18) runs its idle timer from the moment a connection is accepted until
the request's headers are complete, and again after each response: its
``keep_alive_timeout`` is a deadline for headers (``--header-timeout``), and
``h11_max_incomplete_size`` bounds their size. The body's deadline (``--body-timeout``) and
the budget of request bytes in memory (``--max-inflight-mb``) are the app's
(:class:`~vlm_reward.server.middleware.BodySizeLimit`), since only the app knows a request's size.
Hypercorn has no cap on open connections: :class:`~vlm_reward.server.connection_cap.ConnectionCap`
wraps its listening sockets (``--max-connections``).

The drain: on SIGTERM or SIGINT the service stops taking work (503 ``shutting_down`` with
``Retry-After``, ``/health`` 503) while the listener stays open, so a request that still
arrives is answered rather than refused; admitted jobs run to their answers for up to
``--drain-timeout`` seconds; the rest get 503; then Hypercorn closes the listener, lets the
last responses go out and the process exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vlm_reward.argtypes import float_at_least, port, positive_int
from vlm_reward.protocol import DEFAULT_HOST, DEFAULT_PORT
from vlm_reward.settings_flags import flag

# The launchers (vlm_reward.tools.server_process, the Ray-placed replicas) import ServingOptions
# for the drain's default: importing this module must not load the server's stack (FastAPI).
if TYPE_CHECKING:
    from fastapi import FastAPI

    from vlm_reward.server.connection_cap import ConnectionCap
    from vlm_reward.server.service import RewardService

logger = logging.getLogger("vlm_reward.server")

# After the drain, responses already decided still have to be written out.
_FINAL_FLUSH_S = 5.0
# Hypercorn's bound on a request's headers (h11_max_incomplete_size); not a flag: no client of
# this server needs more, and a larger one only lets a connection hold more memory.
_MAX_HEADER_BYTES = 64 * 1024


@dataclass(frozen=True)
class ServingOptions:
    """How the server listens; each field is its flag (:mod:`vlm_reward.settings_flags`), and
    the launchers (:mod:`vlm_reward.tools.server_process`, the ``reward_server`` block) take
    the drain's default from here."""

    host: str = flag(DEFAULT_HOST, help="bind address (default: %(default)s)")
    port: int = flag(DEFAULT_PORT, parse=port, help="port (default: %(default)s)")
    header_timeout_s: float = flag(
        10.0,
        name="header-timeout",
        parse=float_at_least(0, strict=True),
        help="seconds a connection may take to send a request's headers, and may stay idle "
        "(default: %(default)s)",
    )
    drain_timeout_s: float = flag(
        30.0,
        name="drain-timeout",
        parse=float_at_least(0, strict=False),
        help="on SIGTERM/SIGINT, seconds the admitted jobs get to finish before they get 503 "
        "(new requests get 503 at once; default: %(default)s)",
    )
    max_connections: int = flag(
        1000,
        parse=positive_int,
        help="open connections at most; past it the oldest one with no request in progress is closed "
        "(default: %(default)s)",
    )
    ssl_certfile: str | None = flag(None, metavar="PATH", help="serve HTTPS with this certificate (PEM)")
    ssl_keyfile: str | None = flag(None, metavar="PATH", help="the certificate's private key (PEM)")


def bind_address(host: str, port: int) -> str:
    """Hypercorn's ``host:port``, with an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def hypercorn_config(options: ServingOptions, log_level: str, cap: ConnectionCap | None = None) -> Any:
    """The Hypercorn settings that bound connections (see the module docstring); with ``cap``,
    its listening sockets apply it."""
    try:
        from hypercorn.config import Config, Sockets
    except ImportError:
        raise ImportError("the reward server runs on Hypercorn: pip install 'hypercorn==0.18.0'") from None

    # Hypercorn makes its listening sockets here: the one place a cap can wrap them.
    class CappedConfig(Config):  # type: ignore[misc]
        def create_sockets(self) -> Sockets:
            sockets = super().create_sockets()
            if cap is None:
                return sockets
            wrap = (
                [cap.listener(s) for s in sockets.secure_sockets],
                [cap.listener(s) for s in sockets.insecure_sockets],
            )
            return Sockets(wrap[0], wrap[1], sockets.quic_sockets)

    config = CappedConfig()
    config.bind = [bind_address(options.host, options.port)]
    config.keep_alive_timeout = options.header_timeout_s
    config.h11_max_incomplete_size = _MAX_HEADER_BYTES
    config.graceful_timeout = _FINAL_FLUSH_S
    config.accesslog = None  # vlm_reward.server.middleware.RequestLog writes one line per request
    config.errorlog = logging.getLogger("hypercorn.error")
    config.loglevel = log_level.upper()
    if options.ssl_certfile is not None:
        config.certfile = options.ssl_certfile
        config.keyfile = options.ssl_keyfile
    return config


def raise_open_file_limit() -> int:
    """Raise the soft limit on open files to the hard one; returns the limit in force.

    Each connection is a file descriptor: with the common default of 1,024, connections
    alone could make the server unable to open a video.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            return hard
    return soft


async def drain_on_signal(service: RewardService, drain_timeout_s: float) -> None:
    """Return once a SIGTERM/SIGINT has been received and the service has drained.

    Hypercorn's shutdown trigger: until this returns, the listener stays open.
    """
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    logger.info(
        "draining: no new work; waiting up to %g s for %d request(s)", drain_timeout_s, service.active
    )
    service.begin_drain()
    if await service.drain(drain_timeout_s):
        logger.info("drained: every admitted request was answered")
    else:
        logger.warning("drain timeout: answering %d unfinished request(s) 503 shutting_down", service.active)
    await asyncio.to_thread(service.shutdown)
    await service.drain(_FINAL_FLUSH_S)  # the handlers turn the closed jobs into 503s


def serve(app: FastAPI, options: ServingOptions, log_level: str = "info") -> None:
    """Serve ``app`` until a signal has drained it (see the module docstring)."""
    from hypercorn.asyncio import serve as hypercorn_serve

    from vlm_reward.server.connection_cap import ConnectionCap  # the server's stack (see the imports)

    raise_open_file_limit()
    cap = ConnectionCap(options.max_connections)
    config = hypercorn_config(options, log_level, cap)
    service: RewardService = app.state.service
    trigger = lambda: drain_on_signal(service, options.drain_timeout_s)  # noqa: E731
    asyncio.run(hypercorn_serve(cap.track_requests(app), config, shutdown_trigger=trigger))  # type: ignore[arg-type]
    logger.info("shutdown complete")
