"""The main command's episodes and the server's shipped self-test set: one definition of both.

``bash scripts/run.sh`` plays ``reward-eval run`` with :data:`MAIN_JOB`'s options (it reads them
from ``python -m reward_eval.job.main_job``, one argument a line);
``scripts/make_judge_self_test.py`` plays :data:`SELF_TEST`'s. Both are the scripted expert that
drops its last object from carrying height in about half the episodes (with policy seed 3, the
second episode of each task). Their initial states (:func:`Episodes.states`: ``reward-eval run``
plays trials ``0..episodes_per_task-1`` of each task) are the labelled frame set's
:data:`reward_eval.classifier.labelled_set.RESERVED_STATES`, never trained on; ``MAIN_JOB``'s
step limit is the labelled set's too (its episodes end where the main command's would).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

EXPERT_DROPS: Mapping[str, Any] = {"drop": "carry", "drop_prob": 0.5}
POLICY_SEED = 3


@dataclass(frozen=True)
class Episodes:
    """Which episodes a job plays: trials ``0..episodes_per_task-1`` of each task, up to a limit."""

    tasks: tuple[int, ...]
    episodes_per_task: int
    max_episode_steps: int
    policy: str = "expert"
    policy_kwargs: Mapping[str, Any] = field(default_factory=lambda: dict(EXPERT_DROPS))
    policy_seed: int = POLICY_SEED

    def states(self) -> frozenset[tuple[int, int]]:
        """The ``(task, trial)`` initial states the job plays."""
        return frozenset((task, trial) for task in self.tasks for trial in range(self.episodes_per_task))

    def run_args(self) -> list[str]:
        """The ``reward-eval run`` options that play these episodes."""
        return [
            *("--tasks", ",".join(map(str, self.tasks))),
            *("--episodes-per-task", str(self.episodes_per_task)),
            *("--max-episode-steps", str(self.max_episode_steps)),
            *("--policy", self.policy, "--policy-kwargs", json.dumps(dict(self.policy_kwargs))),
            *("--policy-seed", str(self.policy_seed)),
        ]


MAIN_JOB = Episodes(tasks=(0, 1), episodes_per_task=2, max_episode_steps=400)
SELF_TEST = Episodes(tasks=(0, 1), episodes_per_task=3, max_episode_steps=344)


if __name__ == "__main__":
    print("\n".join(MAIN_JOB.run_args()))
    sys.exit(0)
