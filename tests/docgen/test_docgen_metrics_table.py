"""docgen.metrics_table: the series a scrape shows, and the env's episode metrics."""

from __future__ import annotations

import re

from docgen.metrics_table import env_metrics_table, prometheus_table, server_collectors
from vlm_reward.server.metrics import ServerMetrics


def test_every_series_of_a_scrape_is_a_row_with_its_type_and_help() -> None:
    metrics = ServerMetrics(backends=["qwen_vl_hf"], model="m", version="v")
    scrape = metrics.exposition()[0].decode()
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", scrape, re.MULTILINE))
    text = prometheus_table(server_collectors())
    rows = {row.split(" | ")[0].strip("| `"): row for row in text.splitlines()[2:]}
    assert set(rows) == set(types)  # the names a scrape shows (counters with _total, the info's _info)
    assert "| counter | `route`, `status`, `backend`, `error_type` |" in rows["vlm_reward_requests_total"]
    assert "`version`, `backend`, `model`" in rows["vlm_reward_build_info"]
    assert "| gauge | - |" in rows["vlm_reward_draining"]


def test_env_metrics_are_the_envs_keys_in_order() -> None:
    from rlinf.envs.libero.reward_term import VLM_METRIC_KEYS, VLM_METRICS, WORKER_METRICS

    rows = env_metrics_table({**VLM_METRICS, **WORKER_METRICS}).splitlines()[2:]
    assert [row.split(" | ")[0].strip("| `") for row in rows] == [*VLM_METRIC_KEYS, *WORKER_METRICS]


def test_every_series_the_docs_name_is_one_the_server_exposes() -> None:
    from docgen.commands import REPO

    metrics = ServerMetrics(backends=["qwen_vl_hf"], model="m", version="v")
    exposed = set(re.findall(r"^# TYPE (\S+) ", metrics.exposition()[0].decode(), re.MULTILINE))
    pages = [REPO / "README.md", *(REPO / "docs").rglob("*.md")]
    series = re.compile(r"(?<![/\w.])(vlm_reward_[a-z_]+?)(?:_bucket|_sum|_count)?\b(?!\.py)")
    named = {m for page in pages for m in series.findall(page.read_text())}
    assert named and named <= exposed, named - exposed
