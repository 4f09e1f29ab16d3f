"""The env's one watch object: trust, the guard's actions, canaries, reconfiguring. Milliseconds."""

from __future__ import annotations

import logging
from concurrent.futures import Future
from types import SimpleNamespace

import pytest

from vlm_reward.client.config import RewardModelConfig
from vlm_reward.watch.judge_watch import WATCH_METRIC_KEYS, Canary, JudgeWatch

GUARD = {"enable": True, "max_false_positive_rate": 0.5, "min_episodes": 2, "window": 10}


def verdict(score: float, fallback: bool = False) -> SimpleNamespace:
    return SimpleNamespace(score=score, fallback=fallback)


def done(result: object) -> Future:
    future: Future = Future()
    future.set_result(result)
    return future


def watch(training: bool = True, **cfg: object) -> JudgeWatch:
    return JudgeWatch(RewardModelConfig(**cfg), task_ids=range(2), seed=0, training=training)


ACTIONS = [
    ("warn", [True] * 4),
    ("native", [True, False, False, False]),
    ("stop", [True, False, False, False]),
]


@pytest.mark.parametrize(("action", "trusted"), ACTIONS, ids=[a[0] for a in ACTIONS])
def test_the_guard_decides_from_which_episode_on_the_judge_is_trusted(
    action: str, trusted: list[bool], caplog: pytest.LogCaptureFixture
) -> None:
    w = watch(guard={**GUARD, "action": action})
    with caplog.at_level(logging.WARNING):
        # A fooled judge: native failures judged a success. The 2nd one trips the guard (2/2 > 0.5).
        got = [w.episode(0, False, verdict(0.9), step=10 * i) for i in range(4)]
    assert got == trusted
    assert w.metrics()["vlm_guard_tripped"] == 1.0
    [message] = [r.getMessage() for r in caplog.records]
    assert message.startswith("reward guard tripped after 2 judged episodes: false-positive rate 1.000")
    assert "At env step 10. Health window (last 2 judged episodes): false-positive rate 1.000, " in message
    assert "false-negative rate n/a." in message and f"Action {action}:" in message
    assert (w.stop_request == message) == (action == "stop") and (w.stop_request is None) == (
        action != "stop"
    )


@pytest.mark.parametrize(
    ("training", "use_for_training"), [(False, True), (True, False)], ids=["eval_env", "shadow_mode"]
)
def test_the_guard_stays_off_where_nothing_trains_on_the_judge(
    training: bool, use_for_training: bool, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        w = watch(training, use_for_training=use_for_training, guard={**GUARD, "action": "stop"})
    assert "the guard stays off here" in caplog.text
    assert all(w.episode(0, False, verdict(0.9), step=1) for _ in range(5))
    assert w.metrics()["vlm_false_positive_rate"] == 1.0 and w.stop_request is None


def test_fallbacks_count_for_neither_the_rates_nor_the_guard() -> None:
    w = watch(guard={**GUARD, "action": "native"})
    assert all(w.episode(1, False, verdict(0.0, fallback=True), step=1) for _ in range(5))
    metrics = w.metrics()
    assert (metrics["vlm_window_fallbacks"], metrics["vlm_window_native_failures"]) == (5, 0)


def test_canaries_only_for_native_successes_and_counted_toward_the_guard_if_asked() -> None:
    w = watch(canary_rate=1.0, guard={**GUARD, "action": "native", "count_canaries": True})
    assert w.canary_for(native_success=False) is None
    names = [w.canary_for(native_success=True) for _ in range(3)]
    assert names == ["reversed", "frozen", None], "two per chunk"
    for env, name in enumerate(names[:2]):
        w.canary_started(Canary(env, 0, name), done(verdict(1.0)))
    scored = w.collect_canaries(step=5)
    assert [(s.canary.perturbation, s.result.score) for s in scored] == [("reversed", 1.0), ("frozen", 1.0)]
    assert w.metrics()["vlm_canary_false_positive_rate"] == 1.0 and w.distrusts_judge
    w.new_chunk()
    assert w.canary_for(native_success=True) == "clipped"


def test_a_failed_canary_call_is_raised_after_all_are_collected() -> None:
    w = watch(canary_rate=1.0)
    failed: Future = Future()
    failed.set_exception(RuntimeError("reward server down"))
    w.canary_started(Canary(0, 0, "frozen"), failed)
    w.canary_started(Canary(1, 0, "reversed"), done(verdict(0.0)))
    with pytest.raises(RuntimeError, match="reward server down"):
        w.collect_canaries(step=1)
    assert w.collect_canaries(step=2) == [], "nothing left pending"


def test_reconfiguring_keeps_what_did_not_change() -> None:
    w = watch(guard={**GUARD, "action": "native"})
    for _ in range(2):
        w.episode(0, False, verdict(0.9), step=1)
    assert w.distrusts_judge
    w.reconfigure(w.cfg.replace(timeout=5.0))
    assert w.distrusts_judge and w.metrics()["vlm_false_positives"] == 2, "same guard, same windows"
    w.reconfigure(w.cfg.replace(guard={**GUARD, "action": "native", "max_false_positive_rate": 1.0}))
    assert not w.distrusts_judge, "a new guard starts armed"
    w.reconfigure(w.cfg.replace(health_window=3))
    assert w.metrics()["vlm_false_positives"] == 0, "a new window size starts empty"


def test_metrics_keys() -> None:
    """Before any episode: every count (zeros), no rate (none has an episode behind it)."""
    keys = list(watch().metrics())
    rates = {"vlm_false_positive_rate", "vlm_false_negative_rate", "vlm_canary_false_positive_rate"}
    overall = [key for key in WATCH_METRIC_KEYS if key not in rates]
    assert keys[: len(overall)] == overall
    assert keys[len(overall) :] == [
        f"vlm_task_{count}/{task}"
        for task in (0, 1)
        for count in ("false_positives", "native_failures", "false_negatives", "native_successes")
    ]
