"""The env worker of ``--cpu-learn`` runs: RLinf's, writing each rollout's outcomes (:mod:`.outcomes`).

:class:`OutcomesEnvWorker`, or :class:`GuardedOutcomesEnvWorker` when the reward guard may stop the
run (``train_embodied_agent.env_worker_cls`` picks). Rollouts, rewards and metrics are RLinf's,
unchanged; after each ``interact`` the per-episode metrics it returns (one value per env, in env
order: a ``--cpu-learn`` run records them once, at its episodes' end) are also written to
``cpu_smoke.record_dir``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from rlinf.workers.env.env_worker import EnvWorker

from examples.embodiment.cpu_learn.outcomes import outcome_record, outcomes_file
from examples.embodiment.guard_stop import GuardedEnvWorker


class OutcomeRecording:
    """Mixin for RLinf's ``EnvWorker``: after each ``interact`` (one rollout), its outcomes record."""

    async def interact(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """RLinf's ``EnvWorker.interact``, then the step's outcomes record written."""
        metrics = await super().interact(*args, **kwargs)
        self._outcome_step = getattr(self, "_outcome_step", 0) + 1
        record_dir = str(self.cfg.cpu_smoke.record_dir)
        os.makedirs(record_dir, exist_ok=True)
        with open(os.path.join(record_dir, outcomes_file(self._outcome_step, self._rank)), "w") as out:
            group = int(self.cfg.algorithm.group_size)
            json.dump(outcome_record(self._outcome_step, int(self._rank), group, metrics), out)
        return metrics


class OutcomesEnvWorker(OutcomeRecording, EnvWorker):
    """RLinf's env worker that records each rollout's outcomes."""


class GuardedOutcomesEnvWorker(OutcomeRecording, GuardedEnvWorker):
    """The reward guard's env worker that records each rollout's outcomes."""
