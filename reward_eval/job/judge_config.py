"""The client settings of a command that judges a run's episodes again.

They come from the env YAML's block, the command's options, and the judgement of the records
being judged again.

``rescore``, ``audit`` and ``run``'s own audit judge episodes an earlier run already judged:
unset judgement options keep that run's (``--threshold`` its records' ``success_threshold``,
``--binary/--continuous`` their ``binary_reward``), so a re-judged run is comparable with its
source.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from reward_eval.job.options import reward_overrides
from reward_eval.judge.endpoint import JudgeEndpoint
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.episode_record import EpisodeRecord


def common_value(values: Sequence[Any]) -> Any:
    """The one value of ``values`` that is not ``None`` (``None`` when there is none, or several)."""
    found = {v for v in values if v is not None}
    return found.pop() if len(found) == 1 else None


def judge_config(
    args: argparse.Namespace, judge: JudgeEndpoint, records: Sequence[EpisodeRecord], env_config: Path
) -> RewardModelConfig:
    """``env_config``'s ``reward_model`` block with the command's options, pointed at ``judge``,
    the source records' judgement where an option is unset; no episode log (the command writes its own)."""
    block = OmegaConf.to_container(OmegaConf.load(env_config).reward_model, resolve=False)
    block.update(reward_overrides(args, judge), episode_log_dir=None)
    source = {"use_for_training": common_value([r.used_for_training for r in records])}
    if args.threshold is None:
        source["success_threshold"] = common_value([r.success_threshold for r in records])
    if args.binary_reward is None:
        source["binary_reward"] = common_value([r.binary_reward for r in records])
    block.update({key: value for key, value in source.items() if value is not None})
    return RewardModelConfig.from_mapping(block)
