"""The rolling confusion window: counts, eviction and the two rates. Milliseconds."""

from __future__ import annotations

import pytest

from vlm_reward.watch.confusion import RollingConfusion

# (judged, native) pairs, window size, then FP, FN, native failures, successes, FP rate, FN rate
CASES = [
    ("empty", [], 3, (0, 0, 0, 0, None, None)),
    ("one_false_positive", [(1, 0)], 3, (1, 0, 1, 0, 1.0, None)),
    ("mixed", [(1, 0), (0, 0), (0, 1), (1, 1)], 4, (1, 1, 2, 2, 0.5, 0.5)),
    ("oldest_evicted", [(1, 0), (0, 0), (0, 0), (0, 1)], 3, (0, 1, 2, 1, 0.0, 1.0)),
    ("window_of_one", [(1, 0), (1, 1)], 1, (0, 0, 0, 1, None, 0.0)),
]


@pytest.mark.parametrize(("pairs", "size", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_counts_and_rates_over_the_last_episodes(pairs: list, size: int, expected: tuple) -> None:
    window = RollingConfusion(size)
    for judged, native in pairs:
        window.add(bool(judged), bool(native))
    got = (
        window.false_positives,
        window.false_negatives,
        window.native_failures,
        window.native_successes,
        window.false_positive_rate,
        window.false_negative_rate,
    )
    assert got == expected and len(window) == min(len(pairs), size)


@pytest.mark.parametrize("size", [0, -1, 1.5, True], ids=["zero", "negative", "float", "bool"])
def test_a_window_holds_at_least_one_episode(size: object) -> None:
    with pytest.raises(ValueError, match="size must be an int >= 1"):
        RollingConfusion(size)  # type: ignore[arg-type]
