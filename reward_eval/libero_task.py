"""A LIBERO task outside RLinf's env: its files, a camera-less env, ``LiberoEnv``'s reset, the verdict.

Whatever plays or renders LIBERO without RLinf's env (the labelled frame set's
:mod:`reward_eval.classifier.simulation`, ``benchmarks/expert_success.py``,
``benchmarks/two_view_episodes.py``) starts an episode the way ``LiberoEnv.reset`` does, so its
first frame and its physics are the env's: the env seeded and reset, the trial's initial state
set, then :data:`RESET_NOOPS` no-op actions with the gripper open (``reset_gripper_open``, the
project's env YAML). RLinf 0.3.0 writes the 15 as a literal in ``LiberoEnv.reset``; this is the
project's one copy of it.

Beyond LIBERO's 50 initial states of a task (its trials ``0..49``), trial ``SAMPLED_TRIAL0 + i``
is a state :func:`sampled_state` draws: the task's objects placed by the task's own placement
sampler (the distribution LIBERO drew its 50 from), seeded by the trial id, so that a judge can
train on more initial states than LIBERO ships without touching the ones it is measured on.

The simulator's verdict on a state (:func:`goal_verdict`) is LIBERO's own: ``_check_success()``
(the AND of ``_eval_predicate`` over ``parsed_problem["goal_state"]``) and the fraction of those
goal predicates that hold (the simulator's progress: for the basket tasks 0, 0.5 or 1).

LIBERO is imported inside the functions: importing this module costs nothing.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

RESET_NOOPS = 15  # LiberoEnv.reset steps this many no-op actions after setting the init state
NOOP = np.array([0, 0, 0, 0, 0, 0, -1.0])  # no motion, gripper open (reset_gripper_open)
SAMPLED_TRIAL0 = 1000  # the first sampled trial: far above any LIBERO suite's trial count


def task_files(suite: str, task_id: int) -> tuple[str, str]:
    """The task's BDDL file and its language instruction."""
    from libero.libero import benchmark, get_libero_path

    task = benchmark.get_benchmark_dict()[suite]().get_task(task_id)
    return os.path.join(get_libero_path("bddl_files"), task.problem_folder, task.bddl_file), task.language


def init_states(suite: str, task_id: int) -> np.ndarray:
    """The task's initial states (LIBERO's trials), in trial order."""
    from libero.libero import benchmark

    return benchmark.get_benchmark_dict()[suite]().get_task_init_states(task_id)


def initial_state(env: Any, states: np.ndarray, trial: int) -> np.ndarray:
    """Trial ``trial``'s initial state: LIBERO's ``states[trial]``, or a sampled one from
    :data:`SAMPLED_TRIAL0` on; ``ValueError`` for a trial that is neither."""
    if 0 <= trial < len(states):
        return states[trial]
    if trial >= SAMPLED_TRIAL0:
        return sampled_state(env, trial)
    raise ValueError(
        f"trial {trial} is neither one of LIBERO's {len(states)} initial states (0..{len(states) - 1}) "
        f"nor a sampled one ({SAMPLED_TRIAL0} on)."
    )


def sampled_state(env: Any, seed: int) -> np.ndarray:
    """A new initial state of ``env``'s task: the env seeded with ``seed`` and reset, which places
    its objects by the task's placement sampler; the flattened simulator state, as LIBERO's are."""
    env.seed(seed)
    env.reset()
    return np.asarray(env.env.sim.get_state().flatten()).copy()


def headless_env(bddl: str) -> Any:
    """A camera-less env of the task in ``bddl``: the same physics, no rendering (rendering is
    ~90% of a LIBERO step on this CPU, benchmark 7, and never changes the physics)."""
    from libero.libero.envs.env_wrapper import ControlEnv

    return ControlEnv(
        bddl_file_name=bddl, use_camera_obs=False, has_offscreen_renderer=False, camera_names=[]
    )


def reset_to(env: Any, init_state: np.ndarray) -> dict[str, Any]:
    """Reset ``env`` (a LIBERO ``ControlEnv`` or ``OffScreenRenderEnv``) to ``init_state`` as
    ``LiberoEnv.reset`` does (see the module docstring); the observation after the no-ops."""
    env.seed(0)
    env.reset()
    obs = env.set_init_state(init_state)
    for _ in range(RESET_NOOPS):
        obs, *_ = env.step(NOOP)
    return obs


def goal_verdict(env: Any) -> tuple[bool, float]:
    """``(success, goal_fraction)`` of ``env``'s current state (see the module docstring)."""
    inner = env.env
    holds = [bool(inner._eval_predicate(goal)) for goal in inner.parsed_problem["goal_state"]]
    return bool(inner._check_success()), sum(holds) / len(holds)
