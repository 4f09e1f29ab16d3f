"""The ``reward_model`` block a command's judge calls use: its env YAML, its options, the run it
judges again, under the one precedence rule of :mod:`.reward_block`.

Every evaluation command builds its client settings with :func:`judge_settings`: ``run`` for its
episodes (the env's own client) and for its own audit, ``rescore`` and ``audit`` for the run they
judge again, ``finetune`` for its training inputs and its served judges. So a key set in the
env YAML reaches every path, a command-line option overrides it only when given, and a
re-judged run is asked what its source was asked. The env YAML is ``--env-config``, else the
YAML the source run recorded, else the repo's ``libero_10.yaml`` (:func:`.reward_block.env_yaml_path`);
:meth:`JudgeSettings.recorded` is what ``settings.json`` keeps of it: the resolved block, the
source of every key, and which YAML it read.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from reward_eval.job.env_config import load_env_config
from reward_eval.job.options import judge_options
from reward_eval.job.paths import ENV_CONFIG
from reward_eval.job.reward_block import (
    SOURCE_RUN_KEYS,
    EnvYamlSource,
    ResolvedBlock,
    env_yaml_path,
    resolve_reward_block,
)
from reward_eval.job.settings import ENDPOINT_MODEL, RunSettings
from reward_eval.judge.endpoint import DEFAULT_LOCAL_BACKEND, JudgeEndpoint
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.episode_record import EpisodeRecord


@dataclass(frozen=True)
class JudgeSettings:
    """The resolved block of a command's calls and the env YAML it started from."""

    block: ResolvedBlock
    env_config: Path
    env_config_source: EnvYamlSource

    def config(self) -> RewardModelConfig:
        """The client settings, validated as the env validates its block."""
        return self.block.config()

    def recorded(self) -> dict[str, Any]:
        """What ``settings.json`` keeps of them (:class:`..settings.RunSettings`' fields)."""
        return {
            "env_config": str(self.env_config),
            "env_config_source": self.env_config_source,
            "reward_model": dict(self.block.values),
            "reward_model_sources": dict(self.block.sources),
        }


def common_value(values: Sequence[Any]) -> Any:
    """The one value of ``values`` that is not ``None`` (``None`` when there is none, or several)."""
    found = {v for v in values if v is not None}
    return found.pop() if len(found) == 1 else None


def source_run_values(settings: RunSettings, records: Sequence[EpisodeRecord]) -> dict[str, Any]:
    """What the run being judged again was judged with: the :data:`..reward_block.SOURCE_RUN_KEYS`
    of its recorded block; a run dir from before that record gives its episode lines' threshold
    and binary setting (the prompt and score mode it was asked with are unknown there)."""
    if settings.reward_model is not None:
        return {key: settings.reward_model.get(key) for key in SOURCE_RUN_KEYS}
    return {
        "success_threshold": common_value([r.success_threshold for r in records]),
        "binary_reward": common_value([r.binary_reward for r in records]),
    }


def job_keys(args: argparse.Namespace, judge: JudgeEndpoint, **owned: Any) -> dict[str, Any]:
    """The keys a command owns for its calls (:data:`..reward_block.JOB_KEYS`): on, pointed at
    ``judge`` with its key variable, a failed call a fallback (data here, never a stop), nothing
    trained, nothing logged or kept by the client; ``owned`` changes or adds some. Without
    ``--backend`` the calls ask for the backend of the judge the command scores against (a local
    server's, :data:`DEFAULT_LOCAL_BACKEND`; an ``--endpoint``'s own: null), never the YAML's
    serving default, which names the training's judge."""
    keys: dict[str, Any] = {
        "enable": True,
        "endpoint": judge.url,
        "api_key_env": judge.api_key_env,
        "fail_on_request_error": False,
        "use_for_training": False,
        "episode_log_dir": None,
        "keep_temp_video": False,
        "temp_video_dir": None,
    }
    if args.backend is None:  # never the YAML's serving default: the judge the command scores against
        keys["backend"] = DEFAULT_LOCAL_BACKEND if getattr(args, "endpoint", None) is None else None
    return {**keys, **owned}


def rejudge_keys(
    args: argparse.Namespace, judge: JudgeEndpoint, records: Sequence[EpisodeRecord]
) -> dict[str, Any]:
    """:func:`job_keys` of a command that judges a run again: its records say whether they
    trained, and the new ones keep it."""
    trained = common_value([r.used_for_training for r in records])
    return job_keys(args, judge, use_for_training=bool(trained))


def reward_model_block(env: DictConfig) -> dict[str, Any]:
    """The env YAML's ``reward_model`` mapping, its interpolations resolved (``{}`` without one)."""
    block = env.get("reward_model", None)
    if block is None:
        return {}
    plain = OmegaConf.to_container(block, resolve=True)
    if not isinstance(plain, dict):
        raise ValueError(f"the env YAML's reward_model must be a mapping of keys, got {plain!r}.")
    return {str(key): value for key, value in plain.items()}


def judge_settings(
    args: argparse.Namespace,
    job: Mapping[str, Any],
    *,
    source: RunSettings | None = None,
    records: Sequence[EpisodeRecord] = (),
    recorded_env: str | None = None,
) -> JudgeSettings:
    """The settings of a command's calls: the block of its env YAML (``--env-config``, else
    ``recorded_env`` or the ``source`` run's recorded YAML, else the repo's) under its options,
    what ``source`` (the run judged again, with its ``records``) was judged with, and ``job``."""
    recorded = recorded_env if source is None else source.env_config
    path, why = env_yaml_path(getattr(args, "env_config", None), recorded, ENV_CONFIG)
    yaml = reward_model_block(load_env_config(path))
    source_run = None if source is None else source_run_values(source, records)
    block = resolve_reward_block(yaml, job=job, options=judge_options(args), source_run=source_run)
    return JudgeSettings(block, path, why)


def judged_run_settings(
    command: str,
    args: argparse.Namespace,
    *,
    model: str | None,
    random_model: bool,
    judge: JudgeEndpoint,
    judged: JudgeSettings,
    skip: Sequence[str] = (),
    **resolved: Any,
) -> RunSettings:
    """What ``settings.json`` records for a command that judged episodes (``run``, ``rescore``):
    every option (less ``skip``: objects the parser derived), then what was resolved from them,
    which wins: the judge (the backend the calls asked for, the model actually served, or the
    server's for a given ``--endpoint``, whether it is the tiny random one, the endpoint actually
    used), the block and the source of each key, and the command's own ``resolved`` values."""
    return RunSettings.from_options(
        command,
        vars(args),
        skip=skip,
        backend=judged.config().backend,
        model=model if args.endpoint is None else ENDPOINT_MODEL,
        random_model=random_model,
        endpoint=judge.url,
        **judged.recorded(),
        **resolved,
    )
