"""Metric tables: the server's Prometheus series, from its registry; the env's ``vlm_*`` keys.

The Prometheus table is read from a live :class:`~vlm_reward.server.metrics.ServerMetrics`
(every series it registers, with its type, labels and help text), so a series added there is
documented on the next build. Names are written as a scrape shows them: a counter with
``_total``, an info with ``_info``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from docgen.markdown import code, table

_EXPOSED_SUFFIX = {"counter": "_total", "info": "_info"}
_SAMPLE_ONLY_LABELS = {"le"}  # a histogram's bucket bound, not a label a query selects on


def prometheus_table(collectors: Iterable[Any]) -> str:
    """One row per series of ``collectors`` (prometheus-client metrics): name, type, labels, help."""
    rows = []
    for collector in collectors:
        [family] = collector.describe()
        labels = [*collector._labelnames]  # prometheus-client has no public accessor for them
        labels += [
            name
            for sample in _samples(collector)
            for name in sample.labels
            if name not in labels and name not in _SAMPLE_ONLY_LABELS
        ]
        exposed = family.name + _EXPOSED_SUFFIX.get(family.type, "")
        rows.append(
            (
                code(exposed),
                family.type,
                ", ".join(code(label) for label in labels) or "-",
                family.documentation,
            )
        )
    return table(("series", "type", "labels", "what"), rows)


def env_metrics_table(metrics: Mapping[str, str]) -> str:
    """The env's ``infos["episode"]`` keys (``rlinf.envs.libero.reward_term.VLM_METRICS``)."""
    return table(("key", "meaning"), [(code(key), meaning) for key, meaning in metrics.items()])


def server_collectors() -> list[Any]:
    """The series a reward server registers, from a :class:`ServerMetrics` of one backend."""
    from prometheus_client.metrics import MetricWrapperBase

    from vlm_reward.server.metrics import ServerMetrics

    metrics = ServerMetrics(backends=["qwen_vl_vllm"], model="Qwen2.5-VL-7B-Instruct", version="-")
    return [value for value in vars(metrics).values() if isinstance(value, MetricWrapperBase)]


def _samples(collector: Any) -> list[Any]:
    return [sample for family in collector.collect() for sample in family.samples]
