"""The reward server's command line: ``python -m vlm_reward.libero_reward_server --help``.

Flags are validated here (argparse errors, exit status 2), so a bad value never reaches a
running server. The ``--max-*`` flags are generated from the fields of
:class:`~vlm_reward.limits.RequestLimits`, their one definition.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib
import json
import logging
import os
import socket
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

import uvicorn

from vlm_reward.app import create_app
from vlm_reward.backends import canonical_name
from vlm_reward.limits import RequestLimits, flag_name
from vlm_reward.server_config import ServerConfig
from vlm_reward.service import RewardService

DEFAULT_BACKEND = "qwen2_5_vl_vllm"
DEFAULT_PORT = 18080


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


def _add_limit_flags(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("per-request caps (a request above one gets 422 limit_exceeded)")
    for f in dataclasses.fields(RequestLimits):
        parse = _positive_int if f.type in (int, "int") else _float_at_least(0, strict=True)
        group.add_argument(
            f"--{flag_name(f.name)}",
            type=parse,
            default=f.default,
            help=f"{f.metadata['help']} (default: %(default)s)",
        )


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
        "--max-wait-ms",
        type=_float_at_least(0, strict=False),
        default=20.0,
        help="how long a batch waits for requests already on their way (a lone request never waits)",
    )
    _add_limit_flags(p)
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
    limits = RequestLimits(**{f.name: getattr(args, f.name) for f in dataclasses.fields(RequestLimits)})
    config = ServerConfig(
        backend=args.backend,
        model=args.model,
        backend_kwargs=args.backend_kwargs,
        video_root=args.video_root,
        max_batch_size=args.max_batch_size,
        max_wait_ms=args.max_wait_ms,
        limits=limits,
    )
    return config, args


def main(argv: Sequence[str] | None = None) -> None:
    """Run the server until SIGINT/SIGTERM; then queued and running jobs get 503 at once."""
    config, args = parse_config(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        app = create_app(config)
    except (ValueError, TypeError) as exc:
        build_parser().error(f"cannot start backend {config.backend!r}: {exc}")
    uv_config = uvicorn.Config(
        app, host=args.host, port=args.port, log_level=args.log_level, access_log=False
    )
    _PromptShutdownServer(uv_config, app.state.service).run()


class _PromptShutdownServer(uvicorn.Server):
    """uvicorn's server, but a shutdown answers queued and running jobs at once.

    uvicorn waits for in-flight requests before it runs the app's shutdown; with a queue
    of long generations a SIGTERM would wait minutes. Closing the service first answers
    them 503 ``shutting_down`` (clients retry 503), and the wait is then short.
    """

    def __init__(self, config: Any, service: RewardService) -> None:
        super().__init__(config)
        self._service = service

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await asyncio.to_thread(self._service.shutdown)
        await super().shutdown(sockets)
