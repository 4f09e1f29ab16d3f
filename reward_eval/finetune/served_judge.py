"""Everything the fine-tune borrows from the evaluation commands, in one place: the reward
settings the judge is served with, the suite's tasks for ``wrong_task``, and real servers judging
the held-out examples.

The before/after evaluation is the evaluation tools' own path: a local reward server started
with :func:`..judging.endpoint.scoring_endpoint` (``--backend``, ``--server-kwargs``; the base
checkpoint, then the fine-tuned one), the env's own client built from the env YAML's
``reward_model`` block with the command's overrides (:func:`..job.options.reward_overrides`), and
the audit's many-call loop :func:`..judging.calls.judge_all`. The same block gives the training
its request (:class:`.inputs.Request`: ``nframes``, ``max_pixels``, ``video_fps``,
``backend_kwargs``), so what is trained is what these servers are asked.

Two helpers are copies of command-module code (a command module never imports another):
:func:`suite_tasks` and :func:`read_settings` of ``commands/audit.py``, and :func:`reward_block`
follows ``commands/rescore.reward_config`` without the source records' defaults.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reward_eval.analysis.hard_negatives import SuiteTask, scene_of
from reward_eval.finetune.dataset import Example
from reward_eval.finetune.inputs import PROBABILITY, Request
from reward_eval.job.options import reward_overrides
from reward_eval.judging.calls import JudgeCall, judge_all
from reward_eval.judging.endpoint import scoring_endpoint
from vlm_reward.client.episode_record import EpisodeRecord

PENDING_ENDPOINT = "http://127.0.0.1:1/score"  # replaced by the served judge's before any call


def read_settings(run_dir: Path) -> dict[str, Any]:
    """The run's ``settings.json`` (``{}`` when it has none). Copied from ``commands/audit.py``."""
    path = run_dir / "settings.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def suite_tasks(settings: Mapping[str, Any], records: Sequence[EpisodeRecord]) -> dict[int, SuiteTask]:
    """The tasks ``wrong_task`` picks from: the run's LIBERO suite (``settings.json``'s env config)
    with the scenes of the task names; without one, the tasks of the records, scenes unknown.
    Copied from ``commands/audit.py``."""
    env_config = settings.get("env_config")
    if env_config and os.path.isfile(env_config):
        from omegaconf import OmegaConf
        from rlinf.envs.libero.utils import get_benchmark_overridden

        from reward_eval.job.quiet import dropping_stdout_lines

        with dropping_stdout_lines():  # LIBERO prints its task order
            bench = get_benchmark_overridden(OmegaConf.load(env_config).task_suite_name)()
        tasks = [bench.get_task(t) for t in range(bench.get_num_tasks())]
        return {t: SuiteTask(t, scene_of(task.name), task.language) for t, task in enumerate(tasks)}
    texts = {int(r.task_id): str(r.task_text or "") for r in records}
    return {t: SuiteTask(t, "", text) for t, text in sorted(texts.items())}


def reward_block(args: argparse.Namespace) -> dict[str, Any]:
    """The env YAML's ``reward_model`` block with the command's judgement options, in probability
    mode (the readout that is trained); its endpoint is set when a judge is served."""
    from omegaconf import OmegaConf

    block = OmegaConf.to_container(OmegaConf.load(args.env_config).reward_model, resolve=False)
    block.update(reward_overrides(args, PENDING_ENDPOINT), episode_log_dir=None, score_mode=PROBABILITY)
    return block


def training_request(block: Mapping[str, Any], server_kwargs: Mapping[str, Any]) -> Request:
    """What the evaluation's client will send, as the training's :class:`.inputs.Request`."""
    from vlm_reward.client.config import RewardModelConfig

    cfg = RewardModelConfig.from_mapping(dict(block))
    return Request(cfg.nframes, cfg.max_pixels, cfg.video_fps, dict(cfg.backend_kwargs), dict(server_kwargs))


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
    with scoring_endpoint(args, model, video_root, log_path) as endpoint:
        client = RewardClient(RewardModelConfig.from_mapping({**block, "endpoint": endpoint}))
        try:
            results = judge_all(client, calls, args.concurrency, desc)
        finally:
            client.close()
    return [
        {**x.to_json(), "score": None if r.fallback else r.score, "error": r.error if r.fallback else None}
        for x, r in zip(examples, results, strict=True)
    ]
