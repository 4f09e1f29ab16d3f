"""The judge's live health: rolling false-positive and false-negative rates, overall and per task.

:class:`JudgeHealth` is fed every scored episode (its task, native success, and the judge's
verdict, or ``None`` for a fallback) and every scored canary, and returns the metric values
the env adds to ``infos["episode"]`` (RLinf logs them as ``env/<key>``):

- :data:`HEALTH_METRIC_KEYS`: over the last ``window`` judged episodes of every task (see
  :mod:`.confusion` for the rates), the counts behind them, the fallbacks among the last
  ``window`` scored episodes (a fallback carries no verdict, so it is counted apart and
  never enters a rate), and the canaries' false-positive rate over their own window;
- per task, :func:`task_metric_key` ``(TASK_FALSE_POSITIVE_PREFIX, task_id)`` and its
  false-negative twin, over the last ``window`` judged episodes of that task; the label set
  is fixed when the env is built (the suite's task ids), so every chunk logs the same tags.

A rate whose window holds none of its denominator reads 0 (a mean over envs and ranks cannot
take a NaN); the count keys say when that is so.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from vlm_reward.watch.confusion import RollingConfusion

# Each metric and what it means (the docs' metrics table is rendered from this dict).
HEALTH_METRICS: dict[str, str] = {
    "vlm_false_positive_rate": "Judged success among the window's native failures, FP / (FP + TN): how "
    "often a failure the policy produces is rewarded.",
    "vlm_false_negative_rate": "Judged failure among the window's native successes, FN / (FN + TP): how "
    "often a real success goes unrewarded.",
    "vlm_false_positives": "Native failures judged a success, in the window.",
    "vlm_false_negatives": "Native successes judged a failure, in the window.",
    "vlm_window_native_failures": "The false-positive rate's denominator (the rate reads 0 while it is 0).",
    "vlm_window_native_successes": "The false-negative rate's denominator (the rate reads 0 while it is 0).",
    "vlm_window_fallbacks": "Fallbacks among the last health_window scored episodes (in no rate).",
    "vlm_canary_false_positive_rate": "Canaries judged a success, among the last health_window judged "
    "canaries.",
    "vlm_canaries": "Judged canaries in the canary window.",
}
HEALTH_METRIC_KEYS = tuple(HEALTH_METRICS)
TASK_FALSE_POSITIVE_PREFIX = "vlm_task_false_positive_rate"
TASK_FALSE_NEGATIVE_PREFIX = "vlm_task_false_negative_rate"
TASK_METRICS: dict[str, str] = {
    f"{TASK_FALSE_POSITIVE_PREFIX}/<task id>": "The false-positive rate over that task's last "
    "health_window judged episodes; one tag per task id of the suite.",
    f"{TASK_FALSE_NEGATIVE_PREFIX}/<task id>": "The false-negative rate, per task likewise.",
}


def task_metric_key(prefix: str, task_id: int) -> str:
    """The per-task metric of ``task_id`` (``vlm_task_false_positive_rate/3``; TensorBoard:
    ``env/vlm_task_false_positive_rate/3``)."""
    return f"{prefix}/{task_id}"


def _rate(value: float | None) -> float:
    return 0.0 if value is None else float(value)


class JudgeHealth:
    """Rolling windows of the judge's verdicts against the simulator's (see the module docstring)."""

    def __init__(self, window: int, task_ids: Iterable[int]) -> None:
        self.window = window
        self.overall = RollingConfusion(window)
        self.tasks = {int(task): RollingConfusion(window) for task in task_ids}
        if not self.tasks:
            raise ValueError("task_ids must name at least one task (the suite's task ids).")
        self.canaries = RollingConfusion(window)
        self._fallbacks: deque[bool] = deque(maxlen=window)

    def episode(self, task_id: int, native_success: bool, judged_success: bool | None) -> None:
        """One scored episode; ``judged_success`` is ``None`` for a fallback (no verdict)."""
        if task_id not in self.tasks:
            raise ValueError(f"task {task_id!r} is not one of this suite's tasks {sorted(self.tasks)}.")
        self._fallbacks.append(judged_success is None)
        if judged_success is None:
            return
        self.overall.add(judged_success, native_success)
        self.tasks[task_id].add(judged_success, native_success)

    def canary(self, judged_success: bool | None) -> None:
        """One scored canary (a native failure by construction); ``None``: a fallback, not counted."""
        if judged_success is not None:
            self.canaries.add(judged_success, False)

    def metrics(self) -> dict[str, float]:
        """The metric values now: :data:`HEALTH_METRIC_KEYS`, then the per-task rates by task id."""
        overall = self.overall
        values = {
            "vlm_false_positive_rate": _rate(overall.false_positive_rate),
            "vlm_false_negative_rate": _rate(overall.false_negative_rate),
            "vlm_false_positives": float(overall.false_positives),
            "vlm_false_negatives": float(overall.false_negatives),
            "vlm_window_native_failures": float(overall.native_failures),
            "vlm_window_native_successes": float(overall.native_successes),
            "vlm_window_fallbacks": float(sum(self._fallbacks)),
            "vlm_canary_false_positive_rate": _rate(self.canaries.false_positive_rate),
            "vlm_canaries": float(len(self.canaries)),
        }
        for task, window in sorted(self.tasks.items()):
            values[task_metric_key(TASK_FALSE_POSITIVE_PREFIX, task)] = _rate(window.false_positive_rate)
            values[task_metric_key(TASK_FALSE_NEGATIVE_PREFIX, task)] = _rate(window.false_negative_rate)
        return values
