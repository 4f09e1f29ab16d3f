"""The judge's live rates as the rate over every env worker's episodes, not a mean of rates.

RLinf logs each key of the env's ``infos["episode"]`` as its mean over the env workers (and their
done envs): ``env/vlm_false_positive_rate`` would be the mean of the workers' window rates, so a
worker that judged one native failure weighs as much as one that judged fifty, and a worker with
none would drag it towards whatever it reported. The env logs every rate's counts beside it
(:mod:`vlm_reward.watch.judge_health`); :class:`PooledRatesRunner` is RLinf's ``EmbodiedRunner``
whose metric logger replaces every rate with :func:`~vlm_reward.watch.judge_health.pooled_rates`
of the averaged counts (the ratio of the means over the same rows is the ratio of the sums), and
drops a rate no episode is behind. Every other metric is logged as RLinf logs it.
"""

from __future__ import annotations

from typing import Any

from rlinf.runners.embodied_runner import EmbodiedRunner

from vlm_reward.watch.judge_health import pooled_rates

ENV_PREFIX = "env/"  # RLinf's prefix of the env workers' metrics


class PooledRatesLogger:
    """RLinf's ``MetricLogger`` with the judge's rates pooled from their counts on every ``log``."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def log(self, data: dict[str, Any], step: int, *args: Any, **kwargs: Any) -> None:
        self._inner.log(pooled_rates(data, ENV_PREFIX), step, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class PooledRatesRunner(EmbodiedRunner):
    """RLinf's runner, its env metrics' judge rates pooled (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.metric_logger = PooledRatesLogger(self.metric_logger)
