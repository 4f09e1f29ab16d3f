"""The live health metrics: overall, per task, fallbacks apart, canaries. Milliseconds."""

from __future__ import annotations

import pytest

from vlm_reward.watch.judge_health import HEALTH_METRIC_KEYS, JudgeHealth

# (task, native success, judged success or None for a fallback)
EPISODES = [
    (0, False, True),  # FP on task 0
    (0, False, False),
    (0, True, True),
    (1, True, False),  # FN on task 1
    (1, False, None),  # a fallback: in no rate, counted apart
    (1, False, False),
]


def test_metrics_match_a_hand_count() -> None:
    health = JudgeHealth(window=10, task_ids=range(3))
    for task, native, judged in EPISODES:
        health.episode(task, native, judged)
    health.canary(True)
    health.canary(None)  # a canary that fell back is not counted
    health.canary(False)
    metrics = health.metrics()
    assert {k: metrics[k] for k in HEALTH_METRIC_KEYS} == {
        "vlm_false_positive_rate": 1 / 3,  # 1 FP among the 3 judged native failures
        "vlm_false_negative_rate": 1 / 2,  # 1 FN among the 2 judged native successes
        "vlm_false_positives": 1,
        "vlm_false_negatives": 1,
        "vlm_window_native_failures": 3,
        "vlm_window_native_successes": 2,
        "vlm_window_fallbacks": 1,
        "vlm_canary_false_positive_rate": 0.5,
        "vlm_canaries": 2,
    }
    per_task = {k: v for k, v in metrics.items() if k not in HEALTH_METRIC_KEYS}
    assert per_task == {
        "vlm_task_false_positive_rate/0": 0.5,
        "vlm_task_false_negative_rate/0": 0.0,
        "vlm_task_false_positive_rate/1": 0.0,
        "vlm_task_false_negative_rate/1": 1.0,
        "vlm_task_false_positive_rate/2": 0.0,  # never seen: 0, and the tag is there from the start
        "vlm_task_false_negative_rate/2": 0.0,
    }


def test_windows_roll_per_task_and_overall() -> None:
    health = JudgeHealth(window=2, task_ids=[0, 1])
    for judged in (True, True, False, False):
        health.episode(0, False, judged)
    health.episode(1, False, True)
    metrics = health.metrics()
    assert metrics["vlm_task_false_positive_rate/0"] == 0.0, "task 0's last two were judged failures"
    assert metrics["vlm_false_positive_rate"] == 0.5, "overall: the last two episodes (task 0, task 1)"


def test_an_unknown_task_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"task 7 is not one of this suite's tasks \[0, 1\]"):
        JudgeHealth(5, [0, 1]).episode(7, False, True)
