"""Which reward server a scoring request goes to when ``reward_model.endpoint`` lists several.

A GRPO run on several nodes has dozens of env workers ending episodes at once; one judge
is then the bottleneck and the single point of failure. With a list of endpoints each
request goes to the replica with the fewest requests in flight from this client (ties:
the one chosen least recently, so an idle pool is used round-robin). A replica that
refused the connection, timed out or answered a retryable status sits out
``cooldown_s`` seconds and the request moves on to another replica; when every replica
has been tried the failure policy applies (fallback score or fail-fast, as with one).

Pure bookkeeping, thread-safe (the client scores episodes from a thread pool); the clock
is injectable so the tests run in milliseconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class ReplicaStats:
    """What one replica did for this client: requests sent, failures, and when it may be used again."""

    requests: int = 0
    failures: int = 0
    in_flight: int = 0
    last_chosen: int = -1
    cooldown_until: float = float("-inf")


class ReplicaPool:
    """The endpoints of one reward model and the choice between them (see the module docstring)."""

    def __init__(
        self, endpoints: Sequence[str], cooldown_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not endpoints:
            raise ValueError("a replica pool needs at least one endpoint.")
        if len(set(endpoints)) != len(endpoints):
            raise ValueError(f"reward_model.endpoint lists an endpoint twice: {list(endpoints)}.")
        self.endpoints = tuple(endpoints)
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._stats = {endpoint: ReplicaStats() for endpoint in self.endpoints}
        self._choices = 0
        self.failovers = 0

    def order(self, tried: set[str]) -> str | None:
        """The replica to try next, skipping ``tried``; ``None`` when every one has been tried.

        Replicas in cool-down come last (the one whose cool-down ends first): a pool that
        is all cooling down is still tried rather than given up on.
        """
        now = self._clock()
        with self._lock:
            candidates = [e for e in self.endpoints if e not in tried]
            if not candidates:
                return None

            def rank(endpoint: str) -> tuple[bool, float, int, int]:
                stats = self._stats[endpoint]
                cooling = stats.cooldown_until > now
                return cooling, stats.cooldown_until if cooling else 0.0, stats.in_flight, stats.last_chosen

            return min(candidates, key=rank)

    @contextmanager
    def request(self, endpoint: str) -> Iterator[None]:
        """Count one request to ``endpoint`` while it is in flight."""
        with self._lock:
            stats = self._stats[endpoint]
            stats.requests += 1
            stats.in_flight += 1
            stats.last_chosen = self._choices
            self._choices += 1
        try:
            yield
        finally:
            with self._lock:
                stats.in_flight -= 1

    def failed(self, endpoint: str, will_fail_over: bool) -> None:
        """``endpoint`` failed in a way another replica may not: cool it down."""
        with self._lock:
            stats = self._stats[endpoint]
            stats.failures += 1
            stats.cooldown_until = self._clock() + self.cooldown_s
            if will_fail_over:
                self.failovers += 1

    def succeeded(self, endpoint: str) -> None:
        """``endpoint`` answered: it is usable again at once."""
        with self._lock:
            self._stats[endpoint].cooldown_until = float("-inf")

    def snapshot(self) -> dict[str, dict[str, int]]:
        """Requests and failures per endpoint, for metrics and logs."""
        with self._lock:
            return {e: {"requests": s.requests, "failures": s.failures} for e, s in self._stats.items()}
