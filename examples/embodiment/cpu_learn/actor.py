"""The FSDP actor of ``--cpu-learn`` runs: RLinf's, recording what the learning comparison reads.

It is the smoke run's recording actor (:class:`~examples.embodiment.cpu_smoke.actor.CpuSmokeActor`:
initial weights, each step's GRPO batch, the on-policy logprob check) plus, per training step:

* the metrics ``rollout/policy/<mean|std>_<object>_<x|y>`` (the release points' Gaussian the
  step's episodes were drawn from, metres) and ``rollout/groups_with_gradient`` (:mod:`.groups`),
  which RLinf's runner logs with the rest;
* ``learning_step<N>_rank<R>.json`` in ``cpu_smoke.record_dir``: the parameters before and after
  the update, the trajectories' returns and advantages, and the draws they were trained on, so a
  test can check that the parameters moved the way the advantages say.

Training itself is RLinf's, unchanged.
"""

from __future__ import annotations

import json
from typing import Any

import torch
from rlinf.utils.metric_utils import compute_loss_mask

from examples.embodiment.cpu_learn.groups import episode_returns, groups_with_gradient
from examples.embodiment.cpu_learn.policy import release_parameters
from examples.embodiment.cpu_smoke.actor import CpuSmokeActor


class CpuLearnActor(CpuSmokeActor):
    """``CpuSmokeActor`` plus the learning records of the module docstring."""

    def compute_advantages_and_returns(self) -> dict[str, Any]:
        before = self._parameters()
        metrics = super().compute_advantages_and_returns()
        batch = self.rollout_batch
        mask, _ = compute_loss_mask(batch["dones"])  # unfiltered: what each episode earned
        returns = episode_returns(batch["rewards"], mask)
        group = int(self.cfg.algorithm.group_size)
        share = groups_with_gradient(returns, group, float(self.cfg.env.train.reward_coef))
        metrics["groups_with_gradient"] = share
        for name, points in before.items():
            for k, point in enumerate(points):
                for axis, value in zip("xy", point, strict=True):
                    metrics[f"policy/{name}_{k}_{axis}"] = value
        first_chunk = batch["forward_inputs"]
        self._step_record = {
            "step": self._smoke_step,
            "parameters_before": before,
            "returns": returns.tolist(),
            "groups_with_gradient": share,
            # each trajectory's advantage at its first chunk, where its draw is
            "advantages": batch["advantages"][0, :, 0].tolist(),
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
