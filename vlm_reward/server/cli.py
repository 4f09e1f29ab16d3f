"""The reward server's command line: ``python -m vlm_reward.libero_reward_server --help``.

Flags are validated here (argparse errors, exit status 2), so a bad value never reaches a
running server. The ``--max-*`` flags are generated from the fields of
:class:`~vlm_reward.server.limits.RequestLimits`, their one definition.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import ipaddress
import logging
import os
import tempfile
from collections.abc import Sequence

from vlm_reward.argtypes import float_at_least, json_object, port, positive_int
from vlm_reward.backends import canonical_name
from vlm_reward.protocol import API_KEY_ENV
from vlm_reward.server.app import create_app
from vlm_reward.server.auth import load_api_keys
from vlm_reward.server.config import ServerConfig
from vlm_reward.server.limits import RequestLimits, flag_name
from vlm_reward.server.self_test import DEFAULT_SELF_TEST_DIR, SelfTestSettings, load_self_test
from vlm_reward.server.serving import ServingOptions, serve

DEFAULT_BACKEND = "qwen_vl_vllm"
DEFAULT_PORT = 18080


def _add_limit_flags(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("per-request caps (a request above one gets 422 limit_exceeded)")
    for f in dataclasses.fields(RequestLimits):
        parse = positive_int if f.type in (int, "int") else float_at_least(0, strict=True)
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
    p.add_argument("--port", type=port, default=DEFAULT_PORT, help="port (default: %(default)s)")
    p.add_argument(
        "--video-root",
        default=tempfile.gettempdir(),
        help="video_path must resolve inside this directory (default: %(default)s)",
    )
    p.add_argument("--backend-kwargs", type=json_object, default={}, help="JSON object for the backend")
    p.add_argument("--max-batch-size", type=positive_int, default=8, help="jobs per generate call")
    p.add_argument(
        "--max-wait-ms",
        type=float_at_least(0, strict=False),
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
    p.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="server log level (default: %(default)s)",
    )
    _add_self_test_flags(p)
    _add_access_flags(p)
    _add_connection_flags(p)
    return p


def _add_self_test_flags(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group(
        "self-test (off by default): judge labelled episodes before serving; /health is 503 "
        "self_testing meanwhile, then 200, or 503 self_test_failed for good"
    )
    group.add_argument(
        "--self-test",
        nargs="?",
        const=str(DEFAULT_SELF_TEST_DIR),
        metavar="DIR",
        help="a set of labelled episodes (manifest.json + MP4s); without DIR the set shipped with "
        "the server (LIBERO expert successes, near misses and counterfactuals)",
    )
    group.add_argument(
        "--self-test-tolerance",
        type=float_at_least(0, strict=False),
        default=SelfTestSettings.tolerance,
        metavar="FRACTION",
        help="largest fraction of the set the judge may misjudge and still serve (default: %(default)s)",
    )
    group.add_argument(
        "--self-test-threshold",
        type=float_at_least(0, strict=False),
        default=SelfTestSettings.threshold,
        help="a score at or above this is the judge's 'success' (default: %(default)s)",
    )


def _add_access_flags(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group(
        "access (keys come from $" + API_KEY_ENV + ", comma-separated, or --api-key-file; never a flag)"
    )
    group.add_argument(
        "--api-key-file", metavar="PATH", help="file with the accepted API keys, one per line (rotation)"
    )
    group.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="start on a non-loopback --host without an API key (anyone who reaches the port may use it)",
    )
    group.add_argument("--metrics-public", action="store_true", help="serve GET /metrics without a key")
    group.add_argument("--no-metrics", action="store_true", help="no GET /metrics, and no counting behind it")
    group.add_argument("--ssl-certfile", metavar="PATH", help="serve HTTPS with this certificate (PEM)")
    group.add_argument("--ssl-keyfile", metavar="PATH", help="the certificate's private key (PEM)")


def _add_connection_flags(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("connections and shutdown")
    positive = float_at_least(0, strict=True)
    group.add_argument(
        "--header-timeout",
        type=positive,
        default=10.0,
        help="seconds a connection may take to send a request's headers, and may stay idle "
        "(default: %(default)s)",
    )
    group.add_argument(
        "--body-timeout",
        type=positive,
        default=60.0,
        help="seconds a request may take to send its whole body; then 408 (default: %(default)s)",
    )
    group.add_argument(
        "--max-inflight-mb",
        type=positive,
        default=64.0,
        help="megabytes of request bodies held at once (a body takes about 4 times its size while "
        "it is parsed and decoded); past it 503 server_busy (default: %(default)s)",
    )
    group.add_argument(
        "--max-connections",
        type=positive_int,
        default=1000,
        help="open connections at most; past it the oldest one with no request in progress is closed "
        "(default: %(default)s)",
    )
    group.add_argument(
        "--drain-timeout",
        type=float_at_least(0, strict=False),
        default=30.0,
        help="on SIGTERM/SIGINT, seconds the admitted jobs get to finish before they get 503 "
        "(new requests get 503 at once; default: %(default)s)",
    )


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
    try:
        api_keys = load_api_keys(args.api_key_file)
    except ValueError as exc:
        parser.error(str(exc))
    _check_binding(parser, args, has_keys=api_keys is not None)
    for flag in ("self_test_tolerance", "self_test_threshold"):
        if getattr(args, flag) > 1:
            parser.error(f"--{flag.replace('_', '-')} must be in [0, 1], got {getattr(args, flag)}.")
    self_test = None
    if args.self_test is not None:
        try:
            load_self_test(args.self_test)  # the server reads it again; a bad set is an error now
        except ValueError as exc:
            parser.error(f"--self-test: {exc}")
        self_test = SelfTestSettings(args.self_test, args.self_test_tolerance, args.self_test_threshold)
    config = ServerConfig(
        backend=args.backend,
        model=args.model,
        backend_kwargs=args.backend_kwargs,
        video_root=args.video_root,
        max_batch_size=args.max_batch_size,
        max_wait_ms=args.max_wait_ms,
        limits=limits,
        api_keys=api_keys,
        metrics=not args.no_metrics,
        metrics_public=args.metrics_public,
        max_inflight_mb=args.max_inflight_mb,
        body_timeout_s=args.body_timeout,
        self_test=self_test,
    )
    return config, args


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine (``localhost``, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a hostname: it may resolve to any interface


def _check_binding(parser: argparse.ArgumentParser, args: argparse.Namespace, has_keys: bool) -> None:
    """No open judge on the network by accident; TLS flags come in pairs."""
    if not has_keys and not is_loopback(args.host) and not args.allow_unauthenticated:
        parser.error(
            f"--host {args.host} accepts connections from other machines, but no API key is set: "
            f"set {API_KEY_ENV} (or --api-key-file) so only your clients can use the judge, or pass "
            "--allow-unauthenticated to serve it open."
        )
    if (args.ssl_certfile is None) != (args.ssl_keyfile is None):
        parser.error("--ssl-certfile and --ssl-keyfile go together: give both, or neither.")
    for flag in ("ssl_certfile", "ssl_keyfile"):
        path = getattr(args, flag)
        if path is not None and not os.path.isfile(path):
            parser.error(f"--{flag.replace('_', '-')} {path!r} is not an existing file.")


def main(argv: Sequence[str] | None = None) -> None:
    """Run the server until SIGINT/SIGTERM, then drain: new requests get 503 at once, admitted
    jobs get up to ``--drain-timeout`` seconds to finish, the rest 503; then exit 0."""
    config, args = parse_config(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        app = create_app(config)
    except (ValueError, TypeError) as exc:
        build_parser().error(f"cannot start backend {config.backend!r}: {exc}")
    options = ServingOptions(
        host=args.host,
        port=args.port,
        header_timeout_s=args.header_timeout,
        drain_timeout_s=args.drain_timeout,
        max_connections=args.max_connections,
        ssl_certfile=args.ssl_certfile,
        ssl_keyfile=args.ssl_keyfile,
    )
    serve(app, options, args.log_level)
