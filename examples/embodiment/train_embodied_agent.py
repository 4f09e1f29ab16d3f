"""Hydra entry point: GRPO training of an embodied policy with RLinf 0.3.

Run it through ``scripts/run_embodiment.sh CONFIG [hydra overrides...]``, which puts the
repo root first on ``PYTHONPATH`` so the env workers build this fork's ``LiberoEnv``.

The rlinf 0.3.0 wheel ships no training script; this one wires the wheel's public pieces
(config validation, cluster, placement, worker groups, ``EmbodiedRunner``) for the
actor-loss algorithms (PPO/GRPO) with the FSDP actor, which is what the LIBERO configs use.

With ``cpu_smoke.enable`` in the config (``run_embodiment.sh --cpu-smoke``, see
``config/cpu_smoke/tiny.yaml``) the same pipeline runs on CPU as a wiring check, supervised by
``cpu_smoke.SmokeGuard`` (hook check, dead-worker watchdog, hard timeout) and with an actor that
records its GRPO batches. Without it, nothing of that is imported or run.

With ``reward_server.enable`` the run starts its judges on its own Ray cluster before the workers
and stops them when it ends (``judge_replicas.py``); without it, nothing of that runs either.

With a reward guard that may stop the run (``env.train.reward_model.guard.action: stop``), the
env workers and the runner are the ones of :mod:`examples.embodiment.guard_stop`: a stop ends
the run after its checkpoint with a message and exit status 4 (``vlm_reward.exit_statuses.EXIT_GUARD_STOP``).
"""

from __future__ import annotations

import json
import sys
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
    pipeline = cfg.runner.get("use_training_pipeline", False)
    if cfg.get("cpu_learn", {}).get("enable", False) and not pipeline:
        from examples.embodiment.cpu_learn.actor import CpuLearnActor

        return CpuLearnActor
    if cfg.get("cpu_smoke", {}).get("enable", False) and not pipeline:
        from examples.embodiment.cpu_smoke.actor import CpuSmokeActor

        return CpuSmokeActor
    if pipeline:
        from rlinf.workers.actor.fsdp_actor_worker_pipeline import PipelineEmbodiedFSDPActor

        return PipelineEmbodiedFSDPActor
    from rlinf.workers.actor.fsdp_actor_worker import EmbodiedFSDPActor

    return EmbodiedFSDPActor


def describe_ray_cluster() -> str:
    """Which Ray cluster this driver is on: address, started here or attached, its resources.

    RLinf's ``Cluster`` first tries ``ray.init(address="auto")``, which joins any cluster already
    running on the machine (``RAY_ADDRESS`` overrides; ``RAY_ADDRESS=local`` forces a private one),
    so a run says which one it got.
    """
    import ray

    try:
        # Private API, read only: Ray keeps the node it started (head=True) or connected to.
        node = getattr(ray._private.worker, "_global_node", None)
        started = getattr(node, "head", False)
        origin = "private, started by this run" if started else "existing cluster, attached"
        resources = ray.cluster_resources()
        nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
        return (
            f"Ray cluster {ray.get_runtime_context().gcs_address} ({origin}): {nodes} node(s), "
            f"{resources.get('CPU', 0):g} CPUs, {resources.get('GPU', 0):g} GPUs"
        )
    except Exception as exc:  # a report must never stop a training run
        return f"Ray cluster: could not be described ({type(exc).__name__}: {exc})"


def env_worker_cls(cfg: DictConfig) -> type:
    """RLinf's env worker, or the one that reports the reward guard's stop requests; in a
    ``--cpu-learn`` run, the one that also records each episode's outcome (cpu_learn/outcomes.py)."""
    from examples.embodiment.guard_stop import GuardedEnvWorker, stops_on_guard

    if cfg.get("cpu_learn", {}).get("enable", False):
        from examples.embodiment.cpu_learn.env_worker import GuardedOutcomesEnvWorker, OutcomesEnvWorker

        return GuardedOutcomesEnvWorker if stops_on_guard(cfg) else OutcomesEnvWorker
    if stops_on_guard(cfg):
        return GuardedEnvWorker
    from rlinf.workers.env.env_worker import EnvWorker

    return EnvWorker


def runner_cls(cfg: DictConfig) -> type:
    """RLinf's runner with the judge's rates pooled over the env workers, or the one that also
    stops the run when the reward guard asks."""
    from examples.embodiment.guard_stop import GuardedRunner, stops_on_guard

    if stops_on_guard(cfg):
        return GuardedRunner
    from examples.embodiment.pooled_rates import PooledRatesRunner

    return PooledRatesRunner


def launch_groups(cfg: DictConfig) -> dict[str, Any]:
    """Start the Ray cluster and the actor, rollout and env worker groups."""
    from rlinf.scheduler import Cluster
    from rlinf.utils.placement import HybridComponentPlacement
    from rlinf.workers.rollout.hf.huggingface_worker import MultiStepRolloutWorker

    cluster = Cluster(cluster_cfg=cfg.cluster, distributed_log_dir=cfg.runner.per_worker_log_path)
    placement = HybridComponentPlacement(cfg, cluster)
    groups = {
        "actor": (actor_worker_cls(cfg), cfg.actor.group_name),
        "rollout": (MultiStepRolloutWorker, cfg.rollout.group_name),
        "env": (env_worker_cls(cfg), cfg.env.group_name),
    }
    return {
        role: worker.create_group(cfg).launch(
            cluster, name=name, placement_strategy=placement.get_strategy(role)
        )
        for role, (worker, name) in groups.items()
    }


def start_smoke_guard(cfg: DictConfig) -> Any:
    """A running ``SmokeGuard`` for a CPU smoke run, ``None`` otherwise; exits 2 on a broken hook."""
    if not cfg.get("cpu_smoke", {}).get("enable", False):
        return None
    from examples.embodiment.cpu_smoke.guard import PREFIX, SmokeError, SmokeGuard, SmokeSettings
    from examples.embodiment.cpu_smoke.model import prepare_policy
    from vlm_reward.exit_statuses import EXIT_BAD_SETTINGS

    try:
        guard = SmokeGuard(SmokeSettings.from_cfg(cfg))
        plan = prepare_policy(cfg)  # the tiny OpenVLA-OFT is built here, before Ray starts
    except (SmokeError, ValueError) as exc:
        print(f"{PREFIX} FAILED: {exc}", file=sys.stderr, flush=True)
        sys.exit(EXIT_BAD_SETTINGS)
    if plan is not None:
        print(f"{PREFIX} policy: {plan.describe()}", flush=True)
    return guard.start()


def apply_learning_mode(cfg: DictConfig) -> None:
    """A ``--cpu-learn`` run's ``cpu_learn.judge_only`` settings (cpu_learn/judge_only.py), set before
    anything reads them; a setting the mode refuses exits with ``EXIT_BAD_SETTINGS``."""
    if not cfg.get("cpu_learn", {}).get("enable", False):
        return
    from examples.embodiment.cpu_learn.judge_only import apply_judge_only
    from vlm_reward.exit_statuses import EXIT_BAD_SETTINGS

    try:
        changed = apply_judge_only(cfg)
    except (TypeError, ValueError) as exc:
        print(f"[cpu_learn] FAILED: {exc}", file=sys.stderr, flush=True)
        sys.exit(EXIT_BAD_SETTINGS)
    if changed:
        print(f"[cpu_learn] judge-only mode: {', '.join(changed)}", flush=True)


def run_training(runner: Any, smoke_guard: Any) -> None:
    """``runner.run()``; a reward-guard stop closes the loggers, says why and exits with its status."""
    from examples.embodiment.guard_stop import RewardGuardStop
    from vlm_reward.exit_statuses import EXIT_GUARD_STOP

    try:
        runner.run()
    except RewardGuardStop as stop:
        runner.finish()
        if smoke_guard is not None:
            smoke_guard.stand_down(f"the reward guard stopped the run (exit status {EXIT_GUARD_STOP})")
        print(stop.report(), file=sys.stderr, flush=True)
        sys.exit(EXIT_GUARD_STOP)


@hydra.main(version_base="1.1", config_path="config", config_name="libero_10_grpo_openvlaoft")
def main(cfg: DictConfig) -> None:
    from examples.embodiment.judge_replicas import judges_on_cluster, judges_or_exit, validated_or_exit

    apply_learning_mode(cfg)  # before anything reads the env's settings
    judges = judges_or_exit(cfg)  # a wrong reward_server block stops here, before Ray starts
    guard = start_smoke_guard(cfg)  # before Ray starts: its watchdog also covers a hung start
    cfg = validated_or_exit(cfg, judges)  # RLinf's validate_cfg: starts or joins the Ray cluster
    print(json.dumps(OmegaConf.to_container(cfg, resolve=True), indent=2))
    print(f"[run_embodiment] {describe_ray_cluster()}", flush=True)
    if guard is not None:
        guard.expect_workers(cfg)
    with judges_on_cluster(cfg, judges):  # the env workers below get the replicas' endpoints
        groups = launch_groups(cfg)
        # The VLM reward is computed inside the env workers, so RLinf's reward worker stays off.
        runner = runner_cls(cfg)(cfg=cfg, actor=groups["actor"], rollout=groups["rollout"], env=groups["env"])
        runner.init_workers()
        if guard is not None:
            guard.check_hooks()
        run_training(runner, guard)  # a guard stop exits here: the judges are drained on the way out
        if guard is not None:
            guard.finish(cfg)


if __name__ == "__main__":
    mp.set_start_method("spawn", force=True)  # LIBERO's env processes and CUDA need spawn
    main()
