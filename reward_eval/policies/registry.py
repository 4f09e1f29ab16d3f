"""The policy interface of the evaluation job and the registry that names policies.

A policy answers one question per ``chunk_step``: given the env and its current
observation, which ``(num_envs, chunk, 7)`` actions come next? The 7 numbers are
OpenVLA-OFT's action space for LIBERO: a 6-D end-effector delta (x, y, z, roll, pitch,
yaw, each in [-1, 1]) and the gripper (-1 open, +1 closed).

The job never names a policy class: it calls :func:`make_policy` with the ``--policy``
name, so a new policy (an OpenVLA-OFT checkpoint, say) is one class with
``@register_policy("name")`` in a module that the package's ``__init__`` imports (or any
module imported before the job runs).

**The env is part of the interface on purpose.** ``act`` and ``reset`` receive the
``LiberoEnv`` itself, not only the observation dict, because a scripted expert needs
the simulator state that the policy observation hides: ``env.current_raw_obs`` holds
robosuite's raw observation of every env (object poses, ``robot0_eef_pos``, ...),
``env.task_descriptions`` and ``env.task_ids`` say which task each env runs. A learned
policy only reads ``obs`` (``main_images``, ``wrist_images``, ``states``,
``task_descriptions``). Policies must not step or reset the env themselves.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

ACTION_DIM = 7  # 6-D end-effector delta + gripper, as OpenVLA-OFT predicts for LIBERO
GRIPPER_OPEN = -1.0

_REGISTRY: dict[str, type[Policy]] = {}


class Policy(ABC):
    """Maps the env and its current observation to a chunk of actions.

    Subclasses take their options as keyword arguments (``seed`` is always passed, so
    every policy accepts it, even when it has no randomness) and are registered with
    :func:`register_policy`.
    """

    name: ClassVar[str] = ""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def reset(self, env: Any, obs: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Called after every ``env.reset``, i.e. when each env starts a new episode.

        The job resets all envs of a batch together, so one call covers one new episode
        per reset env. The default keeps no per-episode state and does nothing.
        """

    @abstractmethod
    def act(self, env: Any, obs: dict[str, Any], chunk: int) -> np.ndarray:
        """Return ``chunk`` actions per env: float32 of shape ``(env.num_envs, chunk, 7)``."""


def register_policy(name: str) -> Callable[[type[Policy]], type[Policy]]:
    """Class decorator: make ``cls`` available to :func:`make_policy` as ``name``."""

    def decorate(cls: type[Policy]) -> type[Policy]:
        if not (isinstance(cls, type) and issubclass(cls, Policy)):
            raise TypeError(f"@register_policy({name!r}) needs a Policy subclass, got {cls!r}.")
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"policy name {name!r} is already registered by {_REGISTRY[name].__name__}.")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorate


def policy_names() -> list[str]:
    """The registered policy names, sorted."""
    return sorted(_REGISTRY)


def make_policy(name: str, **options: Any) -> Policy:
    """Instantiate the policy registered as ``name`` with ``options`` (``seed``, ``scale``, ...)."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown policy {name!r}; valid policies: {', '.join(policy_names())}.")
    return _REGISTRY[name](**options)
