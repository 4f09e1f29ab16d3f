"""Hydra entry point: GRPO training of an embodied policy with RLinf 0.3.

Run it through ``scripts/run_embodiment.sh CONFIG [hydra overrides...]``, which puts the
repo root first on ``PYTHONPATH`` so the env workers build this fork's ``LiberoEnv``.

The rlinf 0.3.0 wheel ships no training script; this one wires the wheel's public pieces
(config validation, cluster, placement, worker groups, ``EmbodiedRunner``) for the
actor-loss algorithms (PPO/GRPO) with the FSDP actor, which is what the LIBERO configs use.
"""

from __future__ import annotations

import json
from typing import Any

import hydra
import torch.multiprocessing as mp
from omegaconf import DictConfig, OmegaConf

SUPPORTED_LOSSES = ("actor",)


def actor_worker_cls(cfg: DictConfig) -> type:
    """The FSDP actor worker for ``cfg``; other RLinf algorithms need their own workers."""
    loss = cfg.algorithm.loss_type
    if loss not in SUPPORTED_LOSSES:
        raise ValueError(
            f"algorithm.loss_type {loss!r} is not supported by this entry point; "
            f"supported: {', '.join(SUPPORTED_LOSSES)}."
        )
    if cfg.runner.get("use_training_pipeline", False):
        from rlinf.workers.actor.fsdp_actor_worker_pipeline import PipelineEmbodiedFSDPActor

        return PipelineEmbodiedFSDPActor
    from rlinf.workers.actor.fsdp_actor_worker import EmbodiedFSDPActor

    return EmbodiedFSDPActor


def launch_groups(cfg: DictConfig) -> dict[str, Any]:
    """Start the Ray cluster and the actor, rollout and env worker groups."""
    from rlinf.scheduler import Cluster
    from rlinf.utils.placement import HybridComponentPlacement
    from rlinf.workers.env.env_worker import EnvWorker
    from rlinf.workers.rollout.hf.huggingface_worker import MultiStepRolloutWorker

    cluster = Cluster(cluster_cfg=cfg.cluster, distributed_log_dir=cfg.runner.per_worker_log_path)
    placement = HybridComponentPlacement(cfg, cluster)
    groups = {
        "actor": (actor_worker_cls(cfg), cfg.actor.group_name),
        "rollout": (MultiStepRolloutWorker, cfg.rollout.group_name),
        "env": (EnvWorker, cfg.env.group_name),
    }
    return {
        role: worker.create_group(cfg).launch(
            cluster, name=name, placement_strategy=placement.get_strategy(role)
        )
        for role, (worker, name) in groups.items()
    }


@hydra.main(version_base="1.1", config_path="config", config_name="libero_10_grpo_openvlaoft")
def main(cfg: DictConfig) -> None:
    from rlinf.config import validate_cfg
    from rlinf.runners.embodied_runner import EmbodiedRunner

    cfg = validate_cfg(cfg)
    print(json.dumps(OmegaConf.to_container(cfg, resolve=True), indent=2))
    groups = launch_groups(cfg)
    # The VLM reward is computed inside the env workers, so RLinf's reward worker stays off.
    runner = EmbodiedRunner(cfg=cfg, actor=groups["actor"], rollout=groups["rollout"], env=groups["env"])
    runner.init_workers()
    runner.run()


if __name__ == "__main__":
    mp.set_start_method("spawn", force=True)  # LIBERO's env processes and CUDA need spawn
    main()
