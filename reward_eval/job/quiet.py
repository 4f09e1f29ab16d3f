"""Known, harmless start-up noise of the libraries under the job, silenced message by message.

Every LIBERO process of a run (the job itself and each env process it spawns) imports gym,
robosuite and RLinf, and each of them prints the same notices on import: gym's "unmaintained
since 2022" banner, robosuite's "No private macro file found!" (three log lines, plus the
``DeprecationWarning`` of the ``Logger.warn`` call that writes them), RLinf's "Evaluation
Mode: Standard LIBERO" and LIBERO's "[info] using task orders ...". None of them is
actionable for a user of this job, and together they bury its own output.

:func:`silence_known_noise` drops exactly those messages and nothing else: a filter on
the named loggers that matches whole known messages, a ``warnings.showwarning`` hook that
drops only the known warning (installed as a hook, not as a warnings filter, because RLinf
and LIBERO call ``warnings.simplefilter("once", DeprecationWarning)`` on import, which would
override a filter installed earlier), and gym's notice for its installed version taken out
of the table gym prints it from. Every other warning, log record and traceback still shows.
:func:`dropping_stdout_lines` does the same for lines a library prints to stdout.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import warnings
from collections.abc import Iterator, Sequence
from importlib import metadata
from typing import Any, TextIO

# logger name -> the start of each known message it logs (the whole message for RLinf's).
KNOWN_LOG_MESSAGES: dict[str, tuple[str, ...]] = {
    "robosuite_logs": (
        "No private macro file found!",
        "It is recommended to use a private macro file",
        "To setup, run: python ",
    ),
    "RLinf": ("Evaluation Mode: Standard LIBERO",),
}
# (category, message) of each known warning: robosuite's import calls the deprecated Logger.warn.
KNOWN_WARNINGS: tuple[tuple[type[Warning], str], ...] = (
    (DeprecationWarning, "The 'warn' method is deprecated, use 'warning' instead"),
)
# Printed by LIBERO's Benchmark each time a suite is built (the job builds it twice).
KNOWN_STDOUT_LINES = ("[info] using task orders ",)


class KnownMessageFilter(logging.Filter):
    """Drops the records whose message starts with one of ``prefixes``; passes every other."""

    def __init__(self, prefixes: Sequence[str]) -> None:
        super().__init__()
        self.prefixes = tuple(prefixes)

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.prefixes)


def is_known_warning(message: Warning | str, category: type[Warning]) -> bool:
    """Whether a warning is one of :data:`KNOWN_WARNINGS` (same category, same message)."""
    return any(issubclass(category, known) and str(message) == text for known, text in KNOWN_WARNINGS)


def _quiet_showwarning(show: Any) -> Any:
    """``show`` (a ``warnings.showwarning``) that skips the known warnings."""

    def showwarning(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if not is_known_warning(message, category):
            show(message, category, filename, lineno, file, line)

    showwarning.silences_known_noise = True  # type: ignore[attr-defined]
    return showwarning


def drop_gym_notice() -> bool:
    """Take the notice gym prints on import for its installed version out of ``gym_notices``.

    gym prints ``gym_notices.notices.notices[gym.__version__]`` to stderr when it is
    imported; without the entry it prints nothing. Returns whether an entry was removed
    (nothing to do when gym or gym_notices is not installed, or gym was already imported).
    """
    try:
        from gym_notices import notices

        version = metadata.version("gym")
    except (ImportError, metadata.PackageNotFoundError):
        return False
    return notices.notices.pop(version, None) is not None


def silence_known_noise() -> None:
    """Silence the known messages (see the module docstring) in this process; idempotent.

    Call it before the libraries are imported: at the job's entry point, which also runs
    first in every env process the job spawns.
    """
    for name, prefixes in KNOWN_LOG_MESSAGES.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, KnownMessageFilter) for f in logger.filters):
            logger.addFilter(KnownMessageFilter(prefixes))
    if not getattr(warnings.showwarning, "silences_known_noise", False):
        warnings.showwarning = _quiet_showwarning(warnings.showwarning)
    drop_gym_notice()


class _LineFilter(io.TextIOBase):
    """A text stream that forwards whole lines to ``target`` unless they start with ``prefixes``."""

    def __init__(self, target: TextIO, prefixes: Sequence[str]) -> None:
        self.target, self.prefixes, self._pending = target, tuple(prefixes), ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            if not line.startswith(self.prefixes):
                self.target.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        if self._pending and not self._pending.startswith(self.prefixes):
            self.target.write(self._pending)
        self._pending = ""
        self.target.flush()


@contextlib.contextmanager
def dropping_stdout_lines(prefixes: Sequence[str] = KNOWN_STDOUT_LINES) -> Iterator[None]:
    """Within the block, lines printed to ``sys.stdout`` that start with ``prefixes`` are
    dropped; every other line goes through (stderr is untouched)."""
    stream = _LineFilter(sys.stdout, prefixes)
    try:
        with contextlib.redirect_stdout(stream):
            yield
    finally:
        stream.flush()
