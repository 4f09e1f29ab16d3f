"""The judge's live health: rolling false-positive and false-negative rates, overall and per task.

:class:`JudgeHealth` is fed every scored episode (its task, native success, and the judge's
verdict, or ``None`` for a fallback) and every scored canary, and returns the metric values
the env adds to ``infos["episode"]`` (RLinf logs them as ``env/<key>``):

- :data:`HEALTH_METRIC_KEYS`: over the last ``window`` judged episodes of every task (see
  :mod:`.confusion` for the rates), the counts behind them, the fallbacks among the last
  ``window`` scored episodes (a fallback carries no verdict, so it is counted apart and
  never enters a rate), and the canaries' false-positive rate over their own window;
- per task, :func:`task_metric_key` ``(TASK_FALSE_POSITIVE_PREFIX, task_id)`` and its
  false-negative twin, over the last ``window`` judged episodes of that task, with the counts
  behind them (``vlm_task_false_positives/<id>``, ``vlm_task_native_failures/<id>``, ...); the
  label set of the counts is fixed when the env is built (the suite's task ids).

**A rate is logged only over a non-empty denominator**: a task (or a window) with no native
failure behind it has no false-positive rate, and its key is absent rather than a 0 that reads
as a perfect judge. The counts are always logged (a count of zero is a fact).

**Rates are pooled from counts.** RLinf averages every key over the env workers (and their done
envs); a mean of per-worker rates is not the rate over their episodes. So each rate comes with
its numerator and denominator counts (:data:`RATE_COUNTS`, :data:`TASK_RATE_COUNTS`), and the
training driver replaces every logged rate with :func:`pooled_rates` of the averaged counts:
``mean(FP) / mean(failures)`` over the same rows is ``sum(FP) / sum(failures)``, the pooled rate.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from vlm_reward.watch.confusion import RollingConfusion

# Each metric and what it means (the docs' metrics table is rendered from this dict).
HEALTH_METRICS: dict[str, str] = {
    "vlm_false_positive_rate": "Judged success among the window's native failures, FP / (FP + TN): how "
    "often a failure the policy produces is rewarded; pooled over the env workers, absent while no "
    "native failure is behind it.",
    "vlm_false_negative_rate": "Judged failure among the window's native successes, FN / (FN + TP): how "
    "often a real success goes unrewarded; pooled likewise.",
    "vlm_false_positives": "Native failures judged a success, in the window.",
    "vlm_false_negatives": "Native successes judged a failure, in the window.",
    "vlm_window_native_failures": "The false-positive rate's denominator.",
    "vlm_window_native_successes": "The false-negative rate's denominator.",
    "vlm_window_fallbacks": "Fallbacks among the last health_window scored episodes (in no rate).",
    "vlm_canary_false_positive_rate": "Canaries judged a success, among the last health_window judged "
    "canaries.",
    "vlm_canary_false_positives": "Canaries judged a success, in the canary window.",
    "vlm_canaries": "Judged canaries in the canary window.",
}
HEALTH_METRIC_KEYS = tuple(HEALTH_METRICS)
TASK_FALSE_POSITIVE_PREFIX = "vlm_task_false_positive_rate"
TASK_FALSE_NEGATIVE_PREFIX = "vlm_task_false_negative_rate"
TASK_FALSE_POSITIVES = "vlm_task_false_positives"
TASK_NATIVE_FAILURES = "vlm_task_native_failures"
TASK_FALSE_NEGATIVES = "vlm_task_false_negatives"
TASK_NATIVE_SUCCESSES = "vlm_task_native_successes"
TASK_METRICS: dict[str, str] = {
    f"{TASK_FALSE_POSITIVE_PREFIX}/<task id>": "The false-positive rate over that task's last "
    "health_window judged episodes; absent while they hold no native failure.",
    f"{TASK_FALSE_NEGATIVE_PREFIX}/<task id>": "The false-negative rate, per task likewise.",
    f"{TASK_FALSE_POSITIVES}/<task id>": "That task's native failures judged a success, in its window.",
    f"{TASK_NATIVE_FAILURES}/<task id>": "That task's judged native failures, in its window.",
    f"{TASK_FALSE_NEGATIVES}/<task id>": "That task's native successes judged a failure, in its window.",
    f"{TASK_NATIVE_SUCCESSES}/<task id>": "That task's judged native successes, in its window.",
}
# Each overall rate and its (numerator, denominator) counts.
RATE_COUNTS: dict[str, tuple[str, str]] = {
    "vlm_false_positive_rate": ("vlm_false_positives", "vlm_window_native_failures"),
    "vlm_false_negative_rate": ("vlm_false_negatives", "vlm_window_native_successes"),
    "vlm_canary_false_positive_rate": ("vlm_canary_false_positives", "vlm_canaries"),
}
# Each per-task rate prefix and the prefixes of its counts.
TASK_RATE_COUNTS: dict[str, tuple[str, str]] = {
    TASK_FALSE_POSITIVE_PREFIX: (TASK_FALSE_POSITIVES, TASK_NATIVE_FAILURES),
    TASK_FALSE_NEGATIVE_PREFIX: (TASK_FALSE_NEGATIVES, TASK_NATIVE_SUCCESSES),
}


def task_metric_key(prefix: str, task_id: int) -> str:
    """The per-task metric of ``task_id`` (``vlm_task_false_positive_rate/3``; TensorBoard:
    ``env/vlm_task_false_positive_rate/3``)."""
    return f"{prefix}/{task_id}"


def rate_counts(keys: Iterable[str], prefix: str = "") -> list[tuple[str, str, str]]:
    """``(rate, numerator, denominator)`` keys of every rate whose two counts are among ``keys``
    (``prefix``: what the logger puts before each key, RLinf's ``env/``)."""
    keys = set(keys)
    found = [(rate, *counts) for rate, counts in RATE_COUNTS.items()]
    for rate_prefix, (numerator, denominator) in TASK_RATE_COUNTS.items():
        head = f"{prefix}{denominator}/"
        for task in sorted(k[len(head) :] for k in keys if k.startswith(head)):
            found.append((f"{rate_prefix}/{task}", f"{numerator}/{task}", f"{denominator}/{task}"))
    return [
        (prefix + rate, prefix + num, prefix + den)
        for rate, num, den in found
        if prefix + num in keys and prefix + den in keys
    ]


def pooled_rates(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``metrics`` with every rate recomputed from its counts as they stand there (RLinf's means
    over the env workers: the pooled rate), and absent where its denominator is 0."""
    pooled = dict(metrics)
    for rate, numerator, denominator in rate_counts(metrics, prefix):
        den = float(metrics[denominator])
        if den > 0:
            pooled[rate] = float(metrics[numerator]) / den
        else:
            pooled.pop(rate, None)
    return pooled


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
        """The metric values now: :data:`HEALTH_METRIC_KEYS` (a rate only over a non-empty
        denominator), then per task id its counts and its rates (likewise)."""
        overall, canaries = self.overall, self.canaries
        values = {
            "vlm_false_positive_rate": overall.false_positive_rate,
            "vlm_false_negative_rate": overall.false_negative_rate,
            "vlm_false_positives": overall.false_positives,
            "vlm_false_negatives": overall.false_negatives,
            "vlm_window_native_failures": overall.native_failures,
            "vlm_window_native_successes": overall.native_successes,
            "vlm_window_fallbacks": sum(self._fallbacks),
            "vlm_canary_false_positive_rate": canaries.false_positive_rate,
            "vlm_canary_false_positives": canaries.false_positives,
            "vlm_canaries": len(canaries),
        }
        for task, window in sorted(self.tasks.items()):
            values.update(
                {
                    task_metric_key(TASK_FALSE_POSITIVES, task): window.false_positives,
                    task_metric_key(TASK_NATIVE_FAILURES, task): window.native_failures,
                    task_metric_key(TASK_FALSE_NEGATIVES, task): window.false_negatives,
                    task_metric_key(TASK_NATIVE_SUCCESSES, task): window.native_successes,
                    task_metric_key(TASK_FALSE_POSITIVE_PREFIX, task): window.false_positive_rate,
                    task_metric_key(TASK_FALSE_NEGATIVE_PREFIX, task): window.false_negative_rate,
                }
            )
        return {key: float(value) for key, value in values.items() if value is not None}
