"""The reward server's command line: ``python -m vlm_reward.libero_reward_server --help``.

Every flag is a field of a settings class, where its default, parser and help are written
(:mod:`vlm_reward.settings_flags`): :class:`~vlm_reward.server.config.ServerConfig`,
:class:`~vlm_reward.server.limits.RequestLimits` (the ``--max-*`` caps),
:class:`~vlm_reward.server.self_test.SelfTestSettings`,
:class:`~vlm_reward.server.serving.ServingOptions` and
:class:`~vlm_reward.server.launch.LaunchSettings`. This module only lays them out in
``--help``'s groups (:data:`LAYOUT`) and checks what needs more than one flag or the file
system. The API keys are not a flag: they come from ``$VLM_REWARD_API_KEY`` or
``--api-key-file``.

Flags are validated here (argparse errors, exit status 2), so a bad value never reaches a
running server.
"""

from __future__ import annotations

import argparse
import importlib
import ipaddress
import logging
import os
from collections.abc import Sequence

from vlm_reward.backends import canonical_name
from vlm_reward.protocol import API_KEY_ENV
from vlm_reward.server.app import create_app
from vlm_reward.server.auth import load_api_keys
from vlm_reward.server.config import ServerConfig
from vlm_reward.server.launch import LaunchSettings
from vlm_reward.server.limits import RequestLimits
from vlm_reward.server.self_test import SelfTestSettings, load_self_test
from vlm_reward.server.serving import ServingOptions, serve
from vlm_reward.settings_flags import add_flags, flag_name, read, read_optional

_CAPS = "per-request caps (a request above one gets 422 limit_exceeded)"
_SELF_TEST = (
    "self-test (off by default): judge labelled episodes before serving; /health is 503 "
    "self_testing meanwhile, then 200, or 503 self_test_failed for good"
)
_ACCESS = f"access (keys come from ${API_KEY_ENV}, comma-separated, or --api-key-file; never a flag)"
_CONNECTIONS = "connections and shutdown"

# ``--help``, in order: (argument group, or None for argparse's "options"; settings class; its
# fields whose flags go there, None: all of them). Every flag field of every class is here once.
LAYOUT: tuple[tuple[str | None, type, tuple[str, ...] | None], ...] = (
    (None, ServerConfig, ("backend", "model")),
    (None, ServingOptions, ("host", "port")),
    (None, ServerConfig, ("video_root", "backend_kwargs", "max_batch_size", "max_wait_ms")),
    (_CAPS, RequestLimits, None),
    (None, LaunchSettings, ("plugins", "log_level")),
    (_SELF_TEST, SelfTestSettings, None),
    (_ACCESS, LaunchSettings, ("api_key_file", "allow_unauthenticated")),
    (_ACCESS, ServerConfig, ("metrics_public", "metrics")),
    (_ACCESS, ServingOptions, ("ssl_certfile", "ssl_keyfile")),
    (_CONNECTIONS, ServingOptions, ("header_timeout_s",)),
    (_CONNECTIONS, ServerConfig, ("body_timeout_s", "max_inflight_mb")),
    (_CONNECTIONS, ServingOptions, ("max_connections", "drain_timeout_s")),
)


def build_parser() -> argparse.ArgumentParser:
    """The command line (documented in ``--help``), laid out by :data:`LAYOUT`."""
    p = argparse.ArgumentParser(
        prog="python -m vlm_reward.libero_reward_server",
        description="Serve POST /score: judge LIBERO episode videos with a video VLM.",
    )
    groups: dict[str | None, argparse._ActionsContainer] = {None: p}
    for title, settings, names in LAYOUT:
        if title not in groups:
            groups[title] = p.add_argument_group(title)
        add_flags(groups[title], settings, names)
    return p


def parse_config(argv: Sequence[str] | None = None) -> tuple[ServerConfig, argparse.Namespace]:
    """Parse and validate the command line; exits with an argparse error on bad values.

    Returns the server's settings and the namespace, from which :func:`main` reads
    :class:`ServingOptions` and :class:`LaunchSettings`."""
    parser = build_parser()
    args = parser.parse_args(argv)
    launch = read(LaunchSettings, args)
    for module in launch.plugins:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            parser.error(f"--plugin {module}: cannot import it ({exc}).")
    try:
        api_keys = load_api_keys(launch.api_key_file)
    except ValueError as exc:
        parser.error(str(exc))
    config = read(
        ServerConfig,
        args,
        limits=read(RequestLimits, args),
        api_keys=api_keys,
        self_test=read_optional(SelfTestSettings, args),
    )
    _check_judge(parser, config)
    _check_binding(parser, read(ServingOptions, args), launch, has_keys=api_keys is not None)
    return config, args


def _check_judge(parser: argparse.ArgumentParser, config: ServerConfig) -> None:
    """What the judge needs from this machine: a registered backend, the video root, the self-test set."""
    try:
        canonical_name(config.backend)
    except ValueError as exc:
        parser.error(f"--backend: {exc}")
    if not os.path.isdir(config.video_root):
        parser.error(f"--video-root {config.video_root!r} is not an existing directory.")
    if config.self_test is not None:
        try:
            load_self_test(config.self_test.directory)  # the server reads it again; a bad set is an error now
        except ValueError as exc:
            parser.error(f"--self-test: {exc}")


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine (``localhost``, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a hostname: it may resolve to any interface


def _check_binding(
    parser: argparse.ArgumentParser, options: ServingOptions, launch: LaunchSettings, has_keys: bool
) -> None:
    """No open judge on the network by accident; TLS flags come in pairs."""
    if not has_keys and not is_loopback(options.host) and not launch.allow_unauthenticated:
        parser.error(
            f"--host {options.host} accepts connections from other machines, but no API key is set: "
            f"set {API_KEY_ENV} (or --api-key-file) so only your clients can use the judge, or pass "
            "--allow-unauthenticated to serve it open."
        )
    if (options.ssl_certfile is None) != (options.ssl_keyfile is None):
        parser.error("--ssl-certfile and --ssl-keyfile go together: give both, or neither.")
    for name in ("ssl_certfile", "ssl_keyfile"):
        path = getattr(options, name)
        if path is not None and not os.path.isfile(path):
            parser.error(f"{flag_name(ServingOptions, name)} {path!r} is not an existing file.")


def main(argv: Sequence[str] | None = None) -> None:
    """Run the server until SIGINT/SIGTERM, then drain: new requests get 503 at once, admitted
    jobs get up to ``--drain-timeout`` seconds to finish, the rest 503; then exit 0."""
    config, args = parse_config(argv)
    log_level = read(LaunchSettings, args).log_level
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        app = create_app(config)
    except (ValueError, TypeError) as exc:
        build_parser().error(f"cannot start backend {config.backend!r}: {exc}")
    serve(app, read(ServingOptions, args), log_level)
