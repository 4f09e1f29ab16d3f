"""``evenly_spaced``: the one rule for which frames stand for a video."""

from __future__ import annotations

import pytest

from vlm_reward.frames import evenly_spaced

# Halves round to even: 11 * 25 / 22 = 12.5 -> 12 (numpy's linspace makes it 12.500000000000002 -> 13).
HALVES = [0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15, 16, 17, 18, 19, 20, 22, 23, 24, 25]
CASES = [
    ("one_frame", 1, 16, [0]),
    ("fewer_frames_than_asked", 5, 16, [0, 1, 2, 3, 4]),
    ("exactly_asked", 4, 4, [0, 1, 2, 3]),
    ("count_one_is_the_end", 30, 1, [29]),
    ("two_is_the_ends", 30, 2, [0, 29]),
    ("one_more_than_asked", 17, 16, [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16]),
    ("long_episode", 512, 4, [0, 170, 341, 511]),
    ("half_to_even", 26, 23, HALVES),
]


@pytest.mark.parametrize(("total", "count", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_evenly_spaced(total: int, count: int, expected: list[int]) -> None:
    picked = evenly_spaced(total, count)
    assert picked == expected
    assert picked[-1] == total - 1 and picked == sorted(set(picked))


BAD = [(0, 4, "at least one frame"), (4, 0, "must be >= 1"), (4, -1, "must be >= 1")]


@pytest.mark.parametrize(("total", "count", "message"), BAD, ids=["no_frames", "zero", "negative"])
def test_bad_sizes_are_value_errors(total: int, count: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        evenly_spaced(total, count)
