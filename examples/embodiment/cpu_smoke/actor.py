"""The FSDP actor of CPU smoke runs: RLinf's ``EmbodiedFSDPActor`` that also records what it did.

Used only when the config has ``cpu_smoke.enable`` (``run_embodiment.sh --cpu-smoke``). A smoke run
has to prove that it trained on the rewards the env produced, and RLinf logs only aggregates
(mean, min and max advantage), so this actor writes to ``cpu_smoke.record_dir``:

* ``initial_weights.pt``: the full model state dict right after the model is built, to compare
  with the checkpoint's ``model_state_dict/full_weights.pt``;
* ``grpo_batch_step<N>_rank<R>.pt``: per training step, the rollout batch's ``rewards``,
  ``dones``, ``advantages`` and ``loss_mask`` (shape ``[chunk steps, batch, action chunks]``; batch
  column ``i`` is env ``i`` of the env worker with one env worker and one rollout epoch);
* ``onpolicy_logprobs_rank<R>.pt``: for every micro batch before the first optimizer step,
  ``actor`` (the logprobs the actor's training forward computed for the rollout's action tokens)
  and ``rollout`` (the ``prev_logprobs`` the rollout worker sampled them with). Both come from the
  same weights, so they must agree: a processor, prompt, mask or dtype mismatch between rollout
  and actor shows up here, and nowhere else until the run fails to learn.

Training itself is RLinf's, unchanged.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from rlinf.workers.actor.fsdp_actor_worker import EmbodiedFSDPActor

RECORDED_KEYS = ("rewards", "dones", "advantages", "loss_mask")


class _LogprobTap:
    """Stands in for the actor's model during one micro batch and keeps the logprobs it returns."""

    def __init__(self, model: Any, sink: list[torch.Tensor]) -> None:
        self._model, self._sink = model, sink

    def __getattr__(self, name: str) -> Any:  # FSDP's gradient-sync switches and the like
        return getattr(self._model, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        output = self._model(*args, **kwargs)
        self._sink.append(output["logprobs"].detach().cpu().clone())
        return output


class CpuSmokeActor(EmbodiedFSDPActor):
    """``EmbodiedFSDPActor`` plus the records above (rank 0 writes the weights, each rank its batch)."""

    def init_worker(self) -> None:
        super().init_worker()
        self._smoke_step = 0
        self._onpolicy: dict[str, list[torch.Tensor]] | None = {"actor": [], "rollout": []}
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

    def train_micro_batch(
        self, micro_batch: dict[str, Any], metrics: dict[str, list[float]], *, is_last: bool
    ):
        if self._onpolicy is None:  # after the first update the weights differ from the rollout's
            return super().train_micro_batch(micro_batch, metrics, is_last=is_last)
        self._onpolicy["rollout"].append(micro_batch["prev_logprobs"].detach().cpu().clone())
        model, self.model = self.model, _LogprobTap(self.model, self._onpolicy["actor"])
        try:
            return super().train_micro_batch(micro_batch, metrics, is_last=is_last)
        finally:
            self.model = model

    def optimizer_step(self) -> Any:
        if self._onpolicy is not None:
            records = {key: torch.cat(values) for key, values in self._onpolicy.items()}
            torch.save(records, self._record_path(f"onpolicy_logprobs_rank{self._rank}.pt"))
            self._onpolicy = None
        return super().optimizer_step()

    def _record_path(self, name: str) -> str:
        record_dir = str(self.cfg.cpu_smoke.record_dir)
        os.makedirs(record_dir, exist_ok=True)
        return os.path.join(record_dir, name)
