"""A rolling window of judged episodes: how often the judge and the simulator disagreed, and how.

The window keeps the last ``size`` (judged success, native success) pairs and four counts,
updated in O(1) per episode. The rates follow the usual definitions, so they do not move with
the policy's success rate:

- **false-positive rate**: judged success among the native failures, ``FP / (FP + TN)``: how
  often a failure the policy produces is rewarded (what a reward hacker finds);
- **false-negative rate**: judged failure among the native successes, ``FN / (FN + TP)``: how
  often a real success goes unrewarded.

A rate is ``None`` while the window holds none of its denominator.
"""

from __future__ import annotations

from collections import deque


class RollingConfusion:
    """The last ``size`` judged episodes and their confusion counts."""

    def __init__(self, size: int) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"a window holds at least one episode; size must be an int >= 1, got {size!r}.")
        self.size = size
        self._pairs: deque[tuple[bool, bool]] = deque()
        self._counts = {(judged, native): 0 for judged in (False, True) for native in (False, True)}

    def add(self, judged_success: bool, native_success: bool) -> None:
        """One more judged episode; the oldest leaves a full window."""
        if len(self._pairs) == self.size:
            self._counts[self._pairs.popleft()] -= 1
        pair = (bool(judged_success), bool(native_success))
        self._pairs.append(pair)
        self._counts[pair] += 1

    def __len__(self) -> int:
        return len(self._pairs)

    @property
    def false_positives(self) -> int:
        """Native failures judged a success."""
        return self._counts[(True, False)]

    @property
    def false_negatives(self) -> int:
        """Native successes judged a failure."""
        return self._counts[(False, True)]

    @property
    def native_failures(self) -> int:
        return self._counts[(True, False)] + self._counts[(False, False)]

    @property
    def native_successes(self) -> int:
        return self._counts[(True, True)] + self._counts[(False, True)]

    @property
    def false_positive_rate(self) -> float | None:
        """``FP / native failures``; ``None`` without a native failure in the window."""
        failures = self.native_failures
        return self.false_positives / failures if failures else None

    @property
    def false_negative_rate(self) -> float | None:
        """``FN / native successes``; ``None`` without a native success in the window."""
        successes = self.native_successes
        return self.false_negatives / successes if successes else None
