"""The live health metrics: overall, per task, fallbacks apart, canaries. Milliseconds."""

from __future__ import annotations

import pytest

from vlm_reward.watch.judge_health import HEALTH_METRIC_KEYS, JudgeHealth, pooled_rates, rate_counts

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
        "vlm_canary_false_positives": 1,
        "vlm_canaries": 2,
    }
    rates = {k: v for k, v in metrics.items() if k.startswith("vlm_task_") and "_rate/" in k}
    assert rates == {
        "vlm_task_false_positive_rate/0": 0.5,
        "vlm_task_false_negative_rate/0": 0.0,
        "vlm_task_false_positive_rate/1": 0.0,
        "vlm_task_false_negative_rate/1": 1.0,
    }, "task 2 was never judged: it has counts (zeros) and no rate"
    assert (metrics["vlm_task_false_positives/2"], metrics["vlm_task_native_failures/2"]) == (0, 0)


@pytest.mark.parametrize(
    ("episodes", "absent"),
    [
        ([], {"vlm_false_positive_rate", "vlm_false_negative_rate", "vlm_canary_false_positive_rate"}),
        ([(0, True, True)], {"vlm_false_positive_rate", "vlm_task_false_positive_rate/0"}),
        ([(0, False, None)], {"vlm_false_positive_rate", "vlm_task_false_positive_rate/0"}),
    ],
    ids=["nothing-judged", "successes-only", "fallback-only"],
)
def test_a_rate_with_no_episode_behind_it_is_absent_never_a_number(episodes, absent) -> None:
    health = JudgeHealth(window=10, task_ids=[0, 1])
    for task, native, judged in episodes:
        health.episode(task, native, judged)
    metrics = health.metrics()
    assert not absent & set(metrics)
    assert "vlm_task_false_positive_rate/1" not in metrics and metrics["vlm_task_native_failures/1"] == 0


def test_pooled_rates_are_the_rate_over_every_workers_episodes_not_the_mean_of_their_rates() -> None:
    """Two env workers: one judged 1 of 1 failure a success, the other 0 of 9. RLinf averages each
    key over them; the pooled rate from the averaged counts is 1/10, the mean of rates 1/2."""
    workers = [JudgeHealth(100, [0]), JudgeHealth(100, [0])]
    workers[0].episode(0, False, True)
    for _ in range(9):
        workers[1].episode(0, False, False)
    rows = [w.metrics() for w in workers]
    averaged = {k: sum(r[k] for r in rows) / 2 for k in rows[0]}  # RLinf's mean over workers
    assert averaged["vlm_false_positive_rate"] == 0.5
    logged = pooled_rates({f"env/{k}": v for k, v in averaged.items()}, prefix="env/")
    assert logged["env/vlm_false_positive_rate"] == pytest.approx(0.1)
    assert logged["env/vlm_task_false_positive_rate/0"] == pytest.approx(0.1)
    assert "env/vlm_false_negative_rate" not in logged, "no native success behind it"


def test_rate_counts_finds_every_task_of_the_logged_keys() -> None:
    keys = JudgeHealth(5, [0, 3]).metrics()
    found = {rate for rate, _, _ in rate_counts(keys)}
    assert found == {
        "vlm_false_positive_rate",
        "vlm_false_negative_rate",
        "vlm_canary_false_positive_rate",
        *(f"vlm_task_false_{kind}_rate/{t}" for kind in ("positive", "negative") for t in (0, 3)),
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
