"""MkDocs hooks (``hooks:`` in mkdocs.yml): the generated reference parts, rendered into their pages.

A page asks for a generated part with a line ``<!-- docgen: NAME -->``; :func:`on_page_markdown`
replaces it with the part rendered from its one definition in the code (:data:`GENERATED`). An
unknown name fails the build. Each part is rendered once per build and may appear on several pages.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# MkDocs imports this file by path; the project's packages live next to its directory.
_REPO = str(Path(__file__).resolve().parents[1])
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

from mkdocs.exceptions import PluginError  # noqa: E402

MARKER = re.compile(r"^<!-- docgen: ([a-z0-9-]+) -->$", re.MULTILINE)


def _reward_model_config() -> str:
    from docgen.config_table import config_table
    from vlm_reward.client.config import RewardModelConfig

    return config_table(RewardModelConfig)


def _reward_server_config() -> str:
    from docgen.config_table import config_table
    from vlm_reward.ray_replicas.config import RewardServerConfig

    return config_table(RewardServerConfig, prefix="reward_server.")


def _simulation_config() -> str:
    from docgen.config_table import dataclass_table
    from rlinf.envs.libero.simulation import BLOCK, KEYS, SimulationConfig

    return dataclass_table(SimulationConfig, KEYS, prefix=f"{BLOCK}.")


def _http_api() -> str:
    from docgen.http_api import error_whens, http_reference, server_schema
    from vlm_reward import errors
    from vlm_reward.protocol import ERROR_STATUS, RETRYABLE_STATUSES

    return http_reference(
        server_schema(), ERROR_STATUS, error_whens(errors.__doc__ or ""), RETRYABLE_STATUSES
    )


def _prometheus_metrics() -> str:
    from docgen.metrics_table import prometheus_table, server_collectors

    return prometheus_table(server_collectors())


def _env_metrics() -> str:
    from docgen.metrics_table import env_metrics_table
    from rlinf.envs.libero.reward_term import VLM_METRICS, WORKER_METRICS

    return env_metrics_table({**VLM_METRICS, **WORKER_METRICS})


def _judge_health_metrics() -> str:
    from docgen.metrics_table import env_metrics_table
    from vlm_reward.watch.judge_watch import WATCH_METRICS

    return env_metrics_table(WATCH_METRICS)


def _cli(*names: str) -> Callable[[], str]:
    def render() -> str:
        from docgen.cli_reference import command_reference
        from docgen.commands import python_commands

        commands = python_commands()
        return command_reference([commands[name] for name in names], level=3)

    return render


def _reward_eval_cli() -> str:
    from docgen.cli_reference import command_reference
    from docgen.commands import reward_eval_commands
    from reward_eval.cli import usage

    return f"```text\n{usage()}\n```\n\n" + command_reference(reward_eval_commands().values(), level=3)


def _episode_log_keys() -> str:
    from docgen.episode_log import episode_log_keys
    from vlm_reward.client import episode_record as line
    from vlm_reward.verdict import JUDGE_KEYS

    keys = (*line.META_KEYS, *line.JUDGEMENT_KEYS, *JUDGE_KEYS, *line.OPTIONAL_JUDGEMENT_KEYS)
    return episode_log_keys(line.EpisodeRecord, keys, line.REQUIRED_KEYS)


def _precedence() -> str:
    from docgen.precedence import precedence_table
    from reward_eval.job.options import OPTION_KEYS, option_flag
    from reward_eval.job.reward_block import JOB_OWNED, SOURCE_RUN_KEYS
    from vlm_reward.client.config import RewardModelConfig

    flags = {key: option_flag(key) for key in OPTION_KEYS}
    return precedence_table(RewardModelConfig.model_fields, flags, SOURCE_RUN_KEYS, JOB_OWNED)


def _exit_statuses() -> str:
    from docgen.exit_statuses import exit_status_reference
    from reward_eval.exit_statuses import REGISTRY as REWARD_EVAL
    from vlm_reward.exit_statuses import REGISTRY

    return exit_status_reference([*REWARD_EVAL, *REGISTRY])


def _scripts() -> str:
    from docgen.cli_reference import scripts_reference
    from docgen.commands import documented_scripts

    return scripts_reference(documented_scripts(), level=3)


def _test_paths() -> str:
    from docgen.suite_tables import path_table
    from tests.paths import PATHS

    return path_table(PATHS)


def _slow_tests() -> str:
    from docgen.suite_tables import slow_table
    from tests.slow_tests import SLOW_TESTS

    return slow_table(SLOW_TESTS)


def _layout() -> str:
    from docgen.layout import collect_layout, render_layout

    return render_layout(collect_layout(Path(_REPO)))


GENERATED: dict[str, Callable[[], str]] = {
    "reward-model-config": _reward_model_config,
    "reward-server-config": _reward_server_config,
    "simulation-config": _simulation_config,
    "http-api": _http_api,
    "prometheus-metrics": _prometheus_metrics,
    "env-metrics": _env_metrics,
    "judge-health-metrics": _judge_health_metrics,
    "cli-server": _cli("python -m vlm_reward.libero_reward_server"),
    "cli-reward-eval": _reward_eval_cli,
    "cli-tools": _cli("python -m vlm_reward.tools.tiny_checkpoint"),
    "cli-scripts": _scripts,
    "exit-statuses": _exit_statuses,
    "episode-log-keys": _episode_log_keys,
    "layout": _layout,
    "reward-block-precedence": _precedence,
    "test-paths": _test_paths,
    "slow-tests": _slow_tests,
}


@functools.cache
def render(name: str) -> str:
    """The generated part ``name`` (rendered once per process)."""
    if name not in GENERATED:
        raise PluginError(f"unknown generated part <!-- docgen: {name} -->; known: {', '.join(GENERATED)}.")
    return GENERATED[name]()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any, **kwargs: Any) -> str:
    """Replace each ``<!-- docgen: NAME -->`` line of a page with the part it names."""
    return MARKER.sub(lambda match: render(match.group(1)), markdown)
