"""The reward guard's decision: threshold, small samples, hysteresis, latching. Milliseconds.

A stream is a string of episodes: ``F`` a false positive (native failure judged a success),
``f`` a native failure judged a failure, ``s`` a native success judged a success. Each case
says at which 1-based episodes the guard trips (``T``) or re-arms (``C``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from vlm_reward.client.config import RewardGuardConfig
from vlm_reward.watch.guard import RewardGuard

PAIRS = {"F": (True, False), "f": (False, False), "s": (True, True)}


@dataclass(frozen=True)
class Case:
    id: str
    stream: str
    events: dict[int, str]  # 1-based episode -> "T" (tripped) or "C" (cleared)
    action: str = "warn"
    max_rate: float = 0.5
    min_episodes: int = 4
    window: int = 100
    clear: float | None = None


CASES = [
    Case("never_above", "fFfFfFfF", {}),  # 2/4, 2/5, 3/6, 3/7, 4/8: never above 0.5
    Case("trips_when_above", "fffFFFF", {7: "T"}),  # 3/6 is not above 0.5; 4/7 is
    Case("small_sample_waits", "FFF" + "f", {}, min_episodes=5),  # 3/4 but only 4 failures
    Case("trips_at_min_episodes", "FFFf", {4: "T"}),  # the 4th failure: 3/4 > 0.5
    Case("successes_do_not_count", "FsssssF" + "FF", {9: "T"}),  # failures only: FFFF -> 4/4 at #9
    Case("warn_once_while_it_hovers", "FFFf" + "FfFf" + "FfFf", {4: "T"}),
    # 3/4 trips; eight failures bring it to 3/12 = 0.25 (the default clear, half of 0.5); 10/19 trips again
    Case("rearms_at_clear_then_trips_again", "FFFf" + "f" * 8 + "F" * 7, {4: "T", 12: "C", 19: "T"}),
    Case("native_latches", "FFFf" + "ffffffffffff", {4: "T"}, action="native"),
    Case("stop_latches", "FFFf" + "ffffffffffff", {4: "T"}, action="stop"),
    Case("rolling_window_clears_by_forgetting", "FFFf" + "ff", {4: "T", 6: "C"}, window=4),  # [Ffff]
    Case("custom_clear", "FFFf" + "ff", {4: "T", 6: "C"}, clear=0.5),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_guard_trips_and_rearms_where_the_rates_say(case: Case) -> None:
    settings = RewardGuardConfig(
        enable=True,
        action=case.action,
        max_false_positive_rate=case.max_rate,
        min_episodes=case.min_episodes,
        window=case.window,
        clear_false_positive_rate=case.clear,
    )
    guard = RewardGuard(settings)
    events = {}
    for i, episode in enumerate(case.stream, start=1):
        event = guard.observe(*PAIRS[episode])
        if event is not None:
            events[i] = "T" if event.kind == "tripped" else "C"
            assert event.action == case.action and event.observed == i
    assert events == case.events
    assert guard.distrusts_judge == (case.action != "warn" and "T" in events.values())


def test_the_event_carries_the_numbers_and_says_them() -> None:
    settings = RewardGuardConfig(enable=True, max_false_positive_rate=0.25, min_episodes=2)
    guard = RewardGuard(settings)
    events = [guard.observe(*PAIRS[e]) for e in "sfF"]
    assert events[:2] == [None, None]
    event = events[2]
    assert (event.false_positive_rate, event.false_positives, event.native_failures, event.judged) == (
        0.5,
        1,
        2,
        3,
    )
    assert event.describe(settings) == (
        "reward guard tripped after 3 judged episodes: false-positive rate 0.500 (1 of 2 native failures "
        "judged a success, over the last 3 judged episodes) is above max_false_positive_rate 0.25."
    )
