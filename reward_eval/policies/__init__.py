"""Policies of the evaluation job, named in a registry (``--policy NAME``).

``registry`` holds the interface (:class:`Policy`) and :func:`register_policy`; ``basic``
the ``zero`` and ``random`` baselines; ``expert`` the scripted LIBERO expert, built on the
``pick_place`` controller and the task plans of ``libero_plans``. Importing this package
registers all of them.
"""

from reward_eval.policies import basic, expert  # noqa: F401 - registers them
from reward_eval.policies.registry import (
    ACTION_DIM,
    GRIPPER_OPEN,
    Policy,
    make_policy,
    policy_names,
    register_policy,
)

__all__ = ["ACTION_DIM", "GRIPPER_OPEN", "Policy", "make_policy", "policy_names", "register_policy"]
