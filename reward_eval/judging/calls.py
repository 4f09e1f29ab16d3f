"""The progress bar of the commands that make many judge calls (``rescore --prefixes``, ``audit``).

A tqdm bar on stderr counting the calls, with the fallbacks so far as its postfix, safe to
update from the worker threads that make the calls.
"""

from __future__ import annotations

import sys
import threading

from tqdm import tqdm


class CallBar:
    """A thread-safe tqdm bar over ``total`` calls labelled ``desc``, fallbacks in its postfix."""

    def __init__(self, total: int, desc: str) -> None:
        self._bar = tqdm(total=total, unit="call", desc=desc, file=sys.stderr)
        self._lock = threading.Lock()
        self._fallbacks = 0

    def done(self, fallback: bool) -> None:
        """Count one finished call (``fallback``: it failed and got the fallback score)."""
        with self._lock:
            self._fallbacks += fallback
            self._bar.set_postfix(fallback=self._fallbacks, refresh=False)
            self._bar.update(1)

    def close(self) -> None:
        """Close the bar (its last state stays on the terminal)."""
        self._bar.close()
