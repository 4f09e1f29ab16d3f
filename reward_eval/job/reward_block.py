"""The ``reward_model`` block a command judges with: one precedence rule over its sources.

Every evaluation command (``run``, its own audit, ``rescore``, ``audit``, ``finetune``) builds the
client settings of its judge calls here, so a key set in the env YAML reaches every path, and a
command's option overrides it only when the user gave it. Per key, the first source that sets it
wins (:data:`SOURCES`, highest first):

1. ``option``: a command-line option the user gave (the options default to ``None``, "not given");
2. ``source_run``: for a command that judges a finished run again, what that run judged with
   (:data:`SOURCE_RUN_KEYS` of its recorded block; a run dir older than the record gives its
   episode lines' ``success_threshold`` and ``binary_reward``);
3. ``env_yaml``: the env YAML's ``reward_model`` block (``--env-config``, else the source run's
   recorded env YAML, else the repo's ``libero_10.yaml``; :func:`env_yaml_path`);

and the keys of :data:`JOB_KEYS` are always the job's (``job``: where the calls go, with which
key, what is logged, that nothing trains here). ``backend_kwargs`` merges key by key in the same
order, so ``--backend-kwargs '{"prompt": "yes_no"}'`` replaces the YAML's prompt and keeps its
other keys. :class:`ResolvedBlock` keeps the source of every key (``backend_kwargs.<key>`` for
the merged ones), which ``settings.json`` records. Pure: no I/O here but :func:`env_yaml_path`'s
file checks.
"""

from __future__ import annotations

import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from vlm_reward.client.config import RewardModelConfig

Source = Literal["option", "source_run", "env_yaml", "job"]
SOURCES: tuple[Source, ...] = typing.get_args(Source)
# What the job decides whatever the YAML or an option says, and what it sets: where the calls go
# and with which key, that a failed call never stops the command (a fallback is data here), that
# nothing trains here, and what the env logs and keeps.
JOB_OWNED: dict[str, str] = {
    "enable": "on",
    "endpoint": "the judge the command scores against (`--endpoint`, or the local server it starts)",
    "api_key_env": "that judge's key variable (`--api-key-env`, or a fresh key of the command's own)",
    "fail_on_request_error": "False: a failed call is counted as a fallback",
    "use_for_training": "False (a re-judged run: its records' value)",
    "episode_log_dir": "`run`: the run dir; the others write their own logs",
    "keep_temp_video": "`run`: `--keep-videos`",
    "temp_video_dir": "`run`: the run dir's `videos/`",
}
JOB_KEYS = tuple(JOB_OWNED)
# What a re-judging command keeps of the run it judges again, unless an option says otherwise.
SOURCE_RUN_KEYS = ("backend_kwargs", "score_mode", "nframes", "success_threshold", "binary_reward")
MERGED_KEY = "backend_kwargs"
# Where the env YAML a command reads came from (settings.json's env_config_source).
EnvYamlSource = Literal["option", "source_run", "default"]
Layers = tuple[tuple[Source, Mapping[str, Any]], ...]


@dataclass(frozen=True)
class ResolvedBlock:
    """The resolved block (``values``) and, per key, the source it came from (``sources``)."""

    values: Mapping[str, Any]
    sources: Mapping[str, Source]

    def config(self) -> RewardModelConfig:
        """The block, validated as the env validates it."""
        return RewardModelConfig.from_mapping(dict(self.values))


def resolve_reward_block(
    env_yaml: Mapping[str, Any],
    *,
    job: Mapping[str, Any],
    options: Mapping[str, Any] | None = None,
    source_run: Mapping[str, Any] | None = None,
) -> ResolvedBlock:
    """The block of ``env_yaml`` (the YAML's ``reward_model`` mapping) under the precedence rule.

    ``job`` must give every key of :data:`JOB_KEYS` (and may own more, e.g. the local server's
    ``backend``); ``options`` map block keys to option values, ``None`` for an option not given;
    ``source_run`` maps block keys to what the source run judged with (``None``: it did not say).
    A key the YAML omits (a user's partial block) has the block's default, as the env gives it.
    """
    options, source_run = dict(options or {}), dict(source_run or {})
    _check_keys(job, options, source_run)
    above: Layers = (("option", options), ("source_run", {k: source_run.get(k) for k in SOURCE_RUN_KEYS}))
    yaml = {**RewardModelConfig().model_dump(), **env_yaml}
    values: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    for key in RewardModelConfig.model_fields:
        if key in job:
            values[key], sources[key] = job[key], "job"
        elif key == MERGED_KEY:
            values[key] = _merge(above, yaml[key], sources)
        else:
            given = [(layer[key], source) for source, layer in above if layer.get(key) is not None]
            values[key], sources[key] = given[0] if given else (yaml[key], "env_yaml")
    return ResolvedBlock(values, sources)


def _merge(above: Layers, yaml: Mapping[str, Any] | None, sources: dict[str, Source]) -> dict[str, Any]:
    """``backend_kwargs`` key by key: the YAML's, then each higher layer's over it."""
    merged: dict[str, Any] = {}
    for source, layer in (("env_yaml", {MERGED_KEY: yaml}), *reversed(above)):
        for key, value in dict(layer.get(MERGED_KEY) or {}).items():
            merged[key] = value
            sources[f"{MERGED_KEY}.{key}"] = source
    return merged


def _check_keys(job: Mapping[str, Any], options: Mapping[str, Any], source_run: Mapping[str, Any]) -> None:
    fields = set(RewardModelConfig.model_fields)
    if missing := [k for k in JOB_KEYS if k not in job]:
        raise ValueError(f"the job must set the reward_model keys it owns; missing: {', '.join(missing)}.")
    for what, given in (("job", job), ("option", options), ("source run", source_run)):
        if unknown := sorted(set(given) - fields):
            raise ValueError(f"{what} sets unknown reward_model keys {unknown}; valid: {', '.join(fields)}.")
    if owned := sorted(k for k, v in options.items() if k in JOB_KEYS and v is not None):
        raise ValueError(f"options cannot set the job's keys {owned}: the job owns {', '.join(JOB_KEYS)}.")


def env_yaml_path(
    option: str | os.PathLike[str] | None, recorded: str | None, default: Path
) -> tuple[Path, EnvYamlSource]:
    """Which env YAML a command reads, and why: ``--env-config`` when given, else the source run's
    recorded YAML when that file still exists, else the repo's ``default``."""
    if option is not None:
        return Path(option), "option"
    if recorded is not None and os.path.isfile(recorded):
        return Path(recorded), "source_run"
    return default, "default"
