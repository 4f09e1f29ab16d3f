"""What the server's process does before it builds the app: plugins, logging, where keys come from.

These flags shape the start-up, not the running server, so they are not part of
:class:`~vlm_reward.server.config.ServerConfig`: :mod:`vlm_reward.server.cli` imports the
plugins, reads the keys (:func:`vlm_reward.server.auth.load_api_keys`) and refuses an open
non-loopback bind with them, then configures logging. Each field is its flag
(:mod:`vlm_reward.settings_flags`).

The API keys themselves are never a flag (a flag would show them in ``ps`` and shell
history): they come from ``$VLM_REWARD_API_KEY`` or the file ``--api-key-file`` names, and
reach the server as :attr:`ServerConfig.api_keys <vlm_reward.server.config.ServerConfig.api_keys>`.
"""

from __future__ import annotations

from dataclasses import dataclass

from vlm_reward.settings_flags import flag

LOG_LEVELS = ("debug", "info", "warning", "error")


@dataclass(frozen=True)
class LaunchSettings:
    """``--plugin``, ``--log-level``, ``--api-key-file`` and ``--allow-unauthenticated``."""

    plugins: list[str] = flag(
        default_factory=list,
        name="plugin",
        repeat=True,
        metavar="MODULE",
        help="import MODULE first so the backends it registers can be used (repeatable)",
    )
    log_level: str = flag("info", choices=LOG_LEVELS, help="server log level (default: %(default)s)")
    api_key_file: str | None = flag(
        None, metavar="PATH", help="file with the accepted API keys, one per line (rotation)"
    )
    allow_unauthenticated: bool = flag(
        False,
        help="start on a non-loopback --host without an API key (anyone who reaches the port may use it)",
    )
