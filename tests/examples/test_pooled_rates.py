"""The training driver logs the judge's rates pooled from their counts (issue 38). Milliseconds."""

from __future__ import annotations

import pytest

from examples.embodiment.pooled_rates import PooledRatesLogger


class Recorder:
    def __init__(self) -> None:
        self.logged: list[tuple[dict, int, dict]] = []
        self.log_path = "/tmp/logs"

    def log(self, data: dict, step: int, **kwargs: object) -> None:
        self.logged.append((data, step, kwargs))


def test_rates_are_replaced_by_the_ratio_of_the_averaged_counts_and_the_rest_is_untouched() -> None:
    inner = Recorder()
    logger = PooledRatesLogger(inner)
    env = {  # RLinf's means over two workers: 1/1 and 0/9 false positives
        "env/vlm_false_positive_rate": 0.5,
        "env/vlm_false_positives": 0.5,
        "env/vlm_window_native_failures": 5.0,
        "env/vlm_false_negative_rate": 0.0,  # a worker's 0 for no successes, averaged in
        "env/vlm_false_negatives": 0.0,
        "env/vlm_window_native_successes": 0.0,
        "env/success_once": 0.25,
    }
    logger.log(env, 3, worker_group_name="env", rank=0)
    [(data, step, kwargs)] = inner.logged
    assert data["env/vlm_false_positive_rate"] == pytest.approx(0.1)
    assert "env/vlm_false_negative_rate" not in data
    assert data["env/success_once"] == 0.25 and (step, kwargs) == (3, {"worker_group_name": "env", "rank": 0})
    logger.log({"train/loss": 1.0}, 4)
    assert inner.logged[-1][0] == {"train/loss": 1.0}
    assert logger.log_path == "/tmp/logs"  # everything else is the inner logger's
