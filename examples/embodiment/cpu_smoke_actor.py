"""The FSDP actor of CPU smoke runs: RLinf's ``EmbodiedFSDPActor`` that also records what it did.

Used only when the config has ``cpu_smoke.enable`` (``run_embodiment.sh --cpu-smoke``). A smoke run
has to prove that it trained on the rewards the env produced, and RLinf logs only aggregates
(mean, min and max advantage), so this actor writes to ``cpu_smoke.record_dir``:

* ``initial_weights.pt``: the full model state dict right after the model is built, to compare
  with the checkpoint's ``model_state_dict/full_weights.pt``;
* ``grpo_batch_step<N>_rank<R>.pt``: per training step, the rollout batch's ``rewards``,
  ``dones``, ``advantages`` and ``loss_mask`` (shape ``[chunk steps, batch, action chunks]``; batch
  column ``i`` is env ``i`` of the env worker with one env worker and one rollout epoch).

Training itself is RLinf's, unchanged.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from rlinf.workers.actor.fsdp_actor_worker import EmbodiedFSDPActor

RECORDED_KEYS = ("rewards", "dones", "advantages", "loss_mask")


class CpuSmokeActor(EmbodiedFSDPActor):
    """``EmbodiedFSDPActor`` plus the records above (rank 0 writes the weights, each rank its batch)."""

    def init_worker(self) -> None:
        super().init_worker()
        self._smoke_step = 0
        # Collective over the actor ranks, like RLinf's own checkpoint save.
        state = self.get_model_state_dict(cpu_offload=True, full_state_dict=True)
        if self._rank == 0:
            weights = {key: value.detach().clone() for key, value in state.items()}
            torch.save(weights, self._record_path("initial_weights.pt"))

    def compute_advantages_and_returns(self) -> dict[str, Any]:
        metrics = super().compute_advantages_and_returns()
        self._smoke_step += 1
        batch = {
            key: value.detach().cpu().clone()
            for key in RECORDED_KEYS
            if isinstance(value := self.rollout_batch.get(key), torch.Tensor)
        }
        torch.save(batch, self._record_path(f"grpo_batch_step{self._smoke_step}_rank{self._rank}.pt"))
        return metrics

    def _record_path(self, name: str) -> str:
        record_dir = str(self.cfg.cpu_smoke.record_dir)
        os.makedirs(record_dir, exist_ok=True)
        return os.path.join(record_dir, name)
