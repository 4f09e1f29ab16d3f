"""The audit's perturbation registry, at the path the audit has always imported it from.

The registry itself lives in :mod:`vlm_reward.perturbations` (one definition): the env sends
its canaries through the same perturbations while a policy trains, and the env must not
depend on this app. Everything is re-exported here, so the audit, its reports and a module
that registers a perturbation of its own keep working unchanged.
"""

from __future__ import annotations

from vlm_reward.perturbations import (
    FAILURE,
    Counterfactual,
    Perturbation,
    Source,
    clipped_frames,
    describe,
    frozen_frames,
    perturb,
    perturbation_names,
    register_perturbation,
    reversed_frames,
    shuffled_frames,
    wrong_task,
)

__all__ = [
    "FAILURE",
    "Counterfactual",
    "Perturbation",
    "Source",
    "clipped_frames",
    "describe",
    "frozen_frames",
    "perturb",
    "perturbation_names",
    "register_perturbation",
    "reversed_frames",
    "shuffled_frames",
    "wrong_task",
]
