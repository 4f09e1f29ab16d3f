"""Waits for a collective group's peer that back off, so a 2-core machine keeps its CPU.

RLinf 0.3 sets a collective group up lazily, at its first send or receive, and the side that
arrives first asks RLinf's ``CollectiveManager`` actor for the group every millisecond
(``Collective._get_group_info_safe``: a blocking Ray call, then ``time.sleep(0.001)``) until the
other side registers it. In an embodied GRPO step the actor is that side: it starts receiving
the rollout's trajectories when the rollout starts and the env worker sends them when it ends,
so for the whole first rollout the actor and the manager answer ~1,000 calls a second. On this
2-core machine that took ~55% of a core (the two processes ~27% each, measured with ``top``)
from the simulator processes for the 3-4 minutes of a learning run's first step; on a GPU node
it is noise, which is why it is only installed by the CPU hooks.

:func:`install` replaces that wait with one that asks at once, then backs off to one call every
:data:`MAX_POLL_S`: the group is found at most that much later, once per group and run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

FIRST_POLL_S = 0.001  # RLinf's own period, kept for the first calls: most groups are ready at once
MAX_POLL_S = 0.05  # ~20 calls a second while a peer is minutes away
WARN_EVERY_S = 300.0  # a peer this late is worth a line in the worker's log


def poll_delays(first: float = FIRST_POLL_S, cap: float = MAX_POLL_S) -> Iterator[float]:
    """The sleeps between calls: ``first``, doubling each time, never above ``cap`` (endless)."""
    delay = first
    while True:
        yield delay
        delay = min(cap, delay * 2)


def _group_info_with_backoff(self: Any, group_name: str) -> Any:
    """``Collective._get_group_info_safe`` with :func:`poll_delays` between the manager calls."""
    started = warned = time.monotonic()
    delays = poll_delays()
    while (info := self._coll_manager.get_collective_group(group_name)) is None:
        time.sleep(next(delays))
        if time.monotonic() - warned >= WARN_EVERY_S:
            warned = time.monotonic()
            self._logger.warning(
                f"Waited {warned - started:.0f} s for collective group {group_name} to be ready..."
            )
    return info


def install() -> None:
    """Replace RLinf's group wait in this process (idempotent)."""
    from rlinf.scheduler.collective.collective import Collective

    Collective._get_group_info_safe = _group_info_with_backoff
