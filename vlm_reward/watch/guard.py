"""The reward guard's decision: is the judge being fooled, and what to do about it.

A policy trained against a judge searches for what the judge calls success; the day it finds
a false positive, the reward goes up while the simulator's success does not. The guard
watches the episodes that train on the judge (``reward_model.guard``,
:class:`~vlm_reward.client.config.RewardGuardConfig`) and **trips** when, over its rolling
window of the last ``window`` judged episodes, the false-positive rate (judged success among
the native failures) is above ``max_false_positive_rate``.

- **Small samples decide nothing**: it never trips while the window holds fewer than
  ``min_episodes`` native failures (one fooled judgement out of two is not a rate).
- **Hysteresis**: a ``warn`` guard trips once, then re-arms only after the rate fell to
  ``clear_false_positive_rate`` (default: half the maximum) or below, so a rate that hovers
  at the threshold warns once, not every episode. ``native`` and ``stop`` latch: once the
  judge is distrusted, it stays distrusted for the run.
- Canaries enter the window as native failures when ``count_canaries``.

:meth:`RewardGuard.observe` returns a :class:`GuardEvent` when the state changes; acting on it
(logging, training on the native reward, stopping the run) is the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from vlm_reward.client.config import RewardGuardConfig
from vlm_reward.watch.confusion import RollingConfusion


@dataclass(frozen=True)
class GuardEvent:
    """The guard tripped or (``warn`` only) re-armed: the window's numbers at that moment."""

    kind: Literal["tripped", "cleared"]
    action: str
    false_positive_rate: float
    false_positives: int
    native_failures: int
    judged: int  # episodes in the window
    observed: int  # episodes (and counted canaries) the guard has seen in all

    def describe(self, settings: RewardGuardConfig) -> str:
        """One sentence with the numbers, for the log."""
        numbers = (
            f"false-positive rate {self.false_positive_rate:.3f} ({self.false_positives} of "
            f"{self.native_failures} native failures judged a success, over the last {self.judged} "
            f"judged episodes)"
        )
        if self.kind == "cleared":
            return f"reward guard re-armed: {numbers} is back at or below {settings.clear_rate:g}."
        return (
            f"reward guard tripped after {self.observed} judged episodes: {numbers} is above "
            f"max_false_positive_rate {settings.max_false_positive_rate:g}."
        )


class RewardGuard:
    """The guard's state over a stream of judged episodes (see the module docstring)."""

    def __init__(self, settings: RewardGuardConfig) -> None:
        self.settings = settings
        self.window = RollingConfusion(settings.window)
        self.tripped = False
        self.observed = 0

    @property
    def distrusts_judge(self) -> bool:
        """Whether episodes must train on the native reward now (``native``/``stop`` tripped)."""
        return self.tripped and self.settings.action != "warn"

    def observe(self, judged_success: bool, native_success: bool) -> GuardEvent | None:
        """One judged episode (or counted canary); the event if this one changed the state."""
        self.observed += 1
        self.window.add(judged_success, native_success)
        rate = self.window.false_positive_rate
        if rate is None:
            return None
        if not self.tripped and self.window.native_failures >= self.settings.min_episodes:
            if rate > self.settings.max_false_positive_rate:
                self.tripped = True
                return self._event("tripped", rate)
        elif self.tripped and self.settings.action == "warn" and rate <= self.settings.clear_rate:
            self.tripped = False
            return self._event("cleared", rate)
        return None

    def _event(self, kind: Literal["tripped", "cleared"], rate: float) -> GuardEvent:
        w = self.window
        return GuardEvent(
            kind, self.settings.action, rate, w.false_positives, w.native_failures, len(w), self.observed
        )
