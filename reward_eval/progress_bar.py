"""Every progress bar of the evaluation app: live on a terminal, a few lines in a log.

On a terminal tqdm redraws one line in place. Written to a file or a pipe (a CI log, ``2> log``)
every redraw is a line of its own, and tqdm redraws up to ten times a second, so set-up's
classifier training (192 steps) wrote 192 lines into CI's log. :func:`progress_bar` is the one
constructor the app's bars use (the rollout, the judge calls, the fine-tune and the classifier's
training): on a terminal it is tqdm's own bar on stderr; when stderr is not a terminal it prints
the bar when it starts, each time another ``1 / LOG_LINES`` of the total is done, and when it
closes, and never more often, whatever the time between updates.

A postfix set between updates must not redraw (``set_postfix(..., refresh=False)``): the next
update draws it.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any

# Lines a bar writes into a log besides its first and its last: one per quarter of the work.
LOG_LINES = 4


def progress_bar(
    total: int, desc: str, unit: str, *, initial: int = 0, postfix: Mapping[str, Any] | None = None
) -> Any:
    """A tqdm bar on stderr over ``total`` ``unit`` s labelled ``desc``, starting at ``initial``
    (a resumed run), showing ``postfix`` until one is set; see the module docstring for a log."""
    from tqdm import tqdm

    stream = sys.stderr
    common = {"total": total, "desc": desc, "unit": unit, "initial": initial, "file": stream}
    common["postfix"] = dict(postfix) if postfix is not None else None
    if getattr(stream, "isatty", lambda: False)():
        return tqdm(**common)
    # miniters: updates between two lines; mininterval 0: no time gate on top; maxinterval inf: tqdm's
    # monitor thread never drops miniters to 1 because a bar went quiet (a slow rollout would print
    # every update again).
    every = max(1, math.ceil(max(total - initial, 1) / LOG_LINES))
    return tqdm(**common, miniters=every, mininterval=0, maxinterval=math.inf)
