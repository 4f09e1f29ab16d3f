"""Which frames of a video stand for it: ``count`` of ``total``, evenly spaced, ends included.

One rule for everyone who subsamples an episode (the env's client choosing what to send,
the backends choosing what to show, the report's filmstrips), so they never disagree
about which frames the judge saw. Pure: no numpy, no I/O.
"""

from __future__ import annotations


def evenly_spaced(total: int, count: int) -> list[int]:
    """``min(count, total)`` indices into ``range(total)``, evenly spaced, first and last included.

    Index ``i`` is ``i * (total - 1) / (count - 1)`` rounded half to even (exactly, as
    Python's ``round`` does; an even count never meets a half). A count of 1 is the last
    frame: the end state is what decides success. ``ValueError`` for a video without frames
    or a count below 1.
    """
    if total < 1:
        raise ValueError(f"a video needs at least one frame, got {total}.")
    if count < 1:
        raise ValueError(f"the frame count must be >= 1, got {count}.")
    count = min(count, total)
    if count == 1:
        return [total - 1]
    return [round(i * (total - 1) / (count - 1)) for i in range(count)]
