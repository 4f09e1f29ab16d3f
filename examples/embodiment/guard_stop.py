"""The reward guard's ``stop``: end a training run after its checkpoint, from the driver.

The guard decides inside the env workers (``reward_model.guard.action: stop``,
:mod:`vlm_reward.watch.judge_watch`), but a worker cannot end a run: an exception raised in a
worker leaves RLinf's driver waiting for ever (the hang :mod:`examples.embodiment.cpu_smoke.guard`
watches the smoke runs for). So the env only *asks*
(``LiberoEnv.reward_guard_stop``, a message), and the driver acts:

- :class:`GuardedEnvWorker` is RLinf's ``EnvWorker`` plus one call,
  :meth:`~GuardedEnvWorker.reward_guard_stops`, which returns its training envs' stop requests;
- :class:`GuardedRunner` is RLinf's ``EmbodiedRunner`` (its judge rates pooled,
  :mod:`examples.embodiment.pooled_rates`) that, after each training step has logged
  its metrics (so the step that tripped the guard is in TensorBoard), asks every env worker,
  and on a request saves the checkpoint RLinf would save at that step (unless it just did:
  ``runner.save_interval``), then raises :class:`RewardGuardStop`;
- the entry point (``train_embodied_agent.py``) catches it, closes RLinf's loggers, prints the
  request and exits with :data:`~vlm_reward.exit_statuses.EXIT_GUARD_STOP`.

Between the trip and the end of the step, the env trains on the native reward, as ``native``
does. Only runs whose train env has ``guard.enable`` with ``action: stop`` use these classes
(:func:`stops_on_guard`); every other run is RLinf's runner and env worker unchanged.
"""

from __future__ import annotations

import os
from typing import Any

from rlinf.envs.utils import get_env_attr
from rlinf.workers.env.env_worker import EnvWorker

from examples.embodiment.pooled_rates import PooledRatesRunner
from vlm_reward.client.config import RewardModelConfig
from vlm_reward.exit_statuses import EXIT_GUARD_STOP

PREFIX = "[reward guard]"


def stops_on_guard(cfg: Any) -> bool:
    """Whether the train env's ``reward_model`` has a guard that may stop the run."""
    block = RewardModelConfig.from_mapping(cfg.env.train.get("reward_model", None))
    return block.enable and block.guard.enable and block.guard.action == "stop"


class RewardGuardStop(Exception):
    """The guard asked the run to stop; raised by :class:`GuardedRunner` after the checkpoint."""

    def __init__(self, request: str, step: int, checkpoint: str) -> None:
        super().__init__(request)
        self.request, self.step, self.checkpoint = request, step, checkpoint

    def report(self) -> str:
        """What the run prints as it ends."""
        return (
            f"{PREFIX} the run stopped after training step {self.step}: {self.request}\n"
            f"{PREFIX} checkpoint: {self.checkpoint} (resume with runner.resume_dir=<it> once the "
            f"judge is fixed); exit status {EXIT_GUARD_STOP}."
        )


class GuardedEnvWorker(EnvWorker):
    """RLinf's env worker that can tell the driver its envs' stop requests."""

    def reward_guard_stops(self) -> list[str]:
        """The stop request of each training env that has one (see ``LiberoEnv.reward_guard_stop``)."""
        requests = (get_env_attr(env, "reward_guard_stop") for env in self.env_list)
        return [request for request in requests if request]


class GuardedRunner(PooledRatesRunner):
    """RLinf's runner that ends the run after a step whose env asked it to (see the module docstring)."""

    _saved_step: int | None = None

    def _save_checkpoint(self) -> None:
        super()._save_checkpoint()
        self._saved_step = self.global_step

    def _log_step_metrics(self, **kwargs: Any) -> None:
        super()._log_step_metrics(**kwargs)  # waits for the env workers' step to finish first
        requests = [request for rank in self.env.reward_guard_stops().wait() for request in rank or ()]
        if not requests:
            return
        if self._saved_step != self.global_step:
            self._save_checkpoint()
        raise RewardGuardStop(requests[0], self.global_step, self.checkpoint_dir())

    def checkpoint_dir(self) -> str:
        """Where RLinf's ``_save_checkpoint`` writes the current step's checkpoint (its layout)."""
        logger = self.cfg.runner.logger
        step_dir = f"checkpoints/global_step_{self.global_step}"
        return os.path.join(logger.log_path, logger.experiment_name, step_dir)

    def finish(self) -> None:
        """Close RLinf's loggers (TensorBoard files flushed) after a stop."""
        self._finish_run()
