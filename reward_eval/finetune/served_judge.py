"""What the fine-tune borrows from the evaluation commands: served judges and their settings.

In one place: the reward settings the judge is served with, the suite's tasks for
``wrong_task``, and real servers judging the held-out examples.

The before/after evaluation is the evaluation tools' own path: a local reward server started
with :func:`..judge.endpoint.scoring_endpoint` (``--backend``, ``--server-kwargs``; the base
checkpoint, then the fine-tuned one), the env's own client built from the env YAML's
``reward_model`` block under the command's options (:func:`..job.judge_config.judge_settings`), and
the audit's many-call loop :func:`..judge.calls.judge_all`. The same block gives the training
its request (:class:`.inputs.Request`: ``nframes``, ``max_pixels``, ``video_fps``,
``backend_kwargs``), so what is trained is what these servers are asked.

:func:`judge_block` is the evaluation commands' block (:func:`..job.judge_config.judge_settings`)
in probability mode (every example is judged in the readout that is trained).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reward_eval.finetune.dataset import Example
from reward_eval.finetune.inputs import PROBABILITY, Request
from reward_eval.job.judge_config import JudgeSettings, common_value, job_keys, judge_settings
from reward_eval.job.settings import RunSettings
from reward_eval.judge.calls import JudgeCall, judge_all
from reward_eval.judge.endpoint import JudgeEndpoint, scoring_endpoint

# Replaced by the served judge's URL and key variable before any call.
PENDING = JudgeEndpoint("http://127.0.0.1:1/score", None)


def judge_block(args: argparse.Namespace) -> JudgeSettings:
    """The block the judge is trained for and served with: the env YAML's (``--env-config``, else
    the one every run recorded, else the repo's) under the command's options, in probability mode
    whatever it says (the readout that is trained: the one exception the fine-tune makes); its
    endpoint is set when a judge is served."""
    recorded = common_value([RunSettings.read(run).env_config for run in args.runs])
    return judge_settings(args, job_keys(args, PENDING, score_mode=PROBABILITY), recorded_env=recorded)


def training_request(block: Mapping[str, Any], server_kwargs: Mapping[str, Any]) -> Request:
    """What the evaluation's client will send, as the training's :class:`.inputs.Request`."""
    from vlm_reward.client.config import RewardModelConfig

    cfg = RewardModelConfig.from_mapping(dict(block))
    return Request(
        cfg.nframes,
        cfg.max_pixels,
        cfg.video_fps,
        dict(cfg.backend_kwargs),
        dict(server_kwargs),
        cfg.native_frame_size,
    )


def judge_examples(
    args: argparse.Namespace,
    model: str,
    examples: Sequence[Example],
    block: Mapping[str, Any],
    log_path: Path,
    desc: str,
) -> list[dict[str, Any]]:
    """Serve ``model`` on a local server (stopped on return) and judge every example once, as
    ``audit`` judges its cases; each example's fields with its ``score`` (``None`` for a failed
    call) and ``error``."""
    from vlm_reward.client.config import RewardModelConfig
    from vlm_reward.client.scoring import RewardClient

    video_root = Path(os.path.commonpath([os.path.dirname(x.video) for x in examples]))
    cfg = RewardModelConfig.from_mapping(dict(block))
    calls = [JudgeCall(x.task_text, x.video, min(x.frames, cfg.nframes), x.label) for x in examples]
    with scoring_endpoint(args, model, video_root, log_path) as judge:
        served = {**block, "endpoint": judge.url, "api_key_env": judge.api_key_env}
        client = RewardClient(RewardModelConfig.from_mapping(served))
        try:
            results = judge_all(client, calls, args.concurrency, desc)
        finally:
            client.close()
    return [
        {**x.to_json(), "score": None if r.fallback else r.score, "error": r.error if r.fallback else None}
        for x, r in zip(examples, results, strict=True)
    ]
