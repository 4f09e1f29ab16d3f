"""The FSDP actor of ``--cpu-learn`` runs: RLinf's, each trajectory weighed alike, recording what the
learning comparison reads.

It is the smoke run's recording actor (:class:`~examples.embodiment.cpu_smoke.actor.CpuSmokeActor`:
initial weights, each step's GRPO batch, the on-policy logprob check) with one change to training:
every trajectory carries the same weight in the loss whatever its length
(:func:`.weights.equal_trajectory_weights`, applied to the received batch after RLinf's loss mask
and reward filter), as OpenVLA-OFT's do; otherwise RLinf's advantages and loss, unchanged. Per
training step it adds:

* the metrics ``rollout/policy/<mean|std>_<object>_<x|y>`` (the release points' Gaussian the
  step's episodes were drawn from, metres), ``rollout/groups_with_gradient`` (the share of GRPO
  groups the actor trained on) and ``rollout/groups_with_spread`` (:mod:`.groups`), which RLinf's
  runner logs with the rest;
* ``learning_step<N>_rank<R>.json`` in ``cpu_smoke.record_dir``: the parameters before and after
  the update, the trajectories' returns, advantages and loss weights, and the draws they were
  trained on, so a test can check that the parameters moved the way the advantages say.
"""

from __future__ import annotations

import json
from typing import Any

import torch
from rlinf.utils.metric_utils import compute_loss_mask

from examples.embodiment.cpu_learn.groups import episode_returns, groups_with_gradient, groups_with_spread
from examples.embodiment.cpu_learn.policy import release_parameters
from examples.embodiment.cpu_learn.weights import LOSS_MASK_SUM, equal_trajectory_weights, per_step_loss_mask
from examples.embodiment.cpu_smoke.actor import CpuSmokeActor


class CpuLearnActor(CpuSmokeActor):
    """``CpuSmokeActor`` with equal trajectory weights, plus the records of the module docstring."""

    def _process_received_rollout_batch(
        self, rollout_batch: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """RLinf's ``EmbodiedFSDPActor._process_received_rollout_batch`` (loss mask, ``loss_mask_sum``,
        reward filter), its per-chunk mask made per step (judge-only runs), then every trajectory's
        ``loss_mask_sum`` at ``max_episode_steps``."""
        batch = per_step_loss_mask(super()._process_received_rollout_batch(rollout_batch))
        return equal_trajectory_weights(batch, int(self.cfg.env.train.max_episode_steps))

    def compute_advantages_and_returns(self) -> dict[str, Any]:
        before = self._parameters()
        metrics = super().compute_advantages_and_returns()
        batch = self.rollout_batch
        mask, _ = compute_loss_mask(batch["dones"])  # unfiltered: what each episode earned
        returns = episode_returns(batch["rewards"], mask)
        group = int(self.cfg.algorithm.group_size)
        trained = groups_with_gradient(batch["advantages"], batch.get("loss_mask"), group)
        metrics["groups_with_gradient"] = trained
        metrics["groups_with_spread"] = groups_with_spread(
            returns, group, float(self.cfg.env.train.reward_coef)
        )
        for name, points in before.items():
            for k, point in enumerate(points):
                for axis, value in zip("xy", point, strict=True):
                    metrics[f"policy/{name}_{k}_{axis}"] = value
        first_chunk = batch["forward_inputs"]
        lengths = batch.get(LOSS_MASK_SUM)
        self._step_record = {
            "step": self._smoke_step,
            "parameters_before": before,
            "returns": returns.tolist(),
            "groups_with_gradient": trained,
            # each trajectory's advantage at its first chunk, where its draw is
            "advantages": batch["advantages"][0, :, 0].tolist(),
            # RLinf's loss divides a trajectory's entries by loss_mask_sum / max_episode_steps
            "loss_mask_sum": None if lengths is None else lengths[0, :, 0].tolist(),
            "release": first_chunk["release"][0].tolist(),
            "drawn": first_chunk["drawn"][0].tolist(),
        }
        return metrics

    def run_training(self) -> dict[str, Any]:
        metrics = super().run_training()
        record = {**self._step_record, "parameters_after": self._parameters()}
        with open(self._record_path(f"learning_step{record['step']}_rank{self._rank}.json"), "w") as out:
            json.dump(record, out, indent=1)
        return metrics

    def _parameters(self) -> dict[str, list[list[float]]]:
        """The Gaussian now, from the full state dict (a collective over the actor ranks)."""
        state = self.get_model_state_dict(cpu_offload=True, full_state_dict=True)
        return release_parameters({key: torch.as_tensor(value) for key, value in state.items()})
