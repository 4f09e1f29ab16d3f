"""The scripted LIBERO expert: real successes on CPU, and a knob to spoil them on purpose.

``--policy expert`` solves the libero_10 basket tasks (0, 1 and 7; see ``libero_plans``)
with :class:`~.pick_place.PickPlaceController`, from the object and end-effector poses in
``env.current_raw_obs``, through ordinary 7-D actions. The noise knob makes the outcomes
of one run a controlled mix, which is what a reward-model evaluation needs:

- ``drop`` (``descend``, ``close``, ``lift`` or ``carry``): on the plan's last object, open
  the gripper as that phase begins and stop. The first object is in the basket; the last
  one is never grasped (``descend``, ``close``), let go as the lift begins (``lift``) or
  dropped from carrying height once lifted (``carry``, it falls back near where it stood):
  a near miss, never a native success.
- ``drop_prob``: the chance that an episode drops (drawn per episode from ``seed``);
  ``0.5`` gives about as many near misses as successes.
- ``action_noise``: the standard deviation of Gaussian noise added to the six motion
  components of every action (clipped to [-1, 1]). Measured on tasks 0 and 1, trials 0-9:
  0.1 still solves 20/20 (with ~5% more steps), 0.2 solves 3/20, 0.3 none: the jittering
  arm rarely settles within the centimetre the descent waits for.
- ``place_noise``: the standard deviation (metres) of a Gaussian drawn once per episode and
  added to the x and y of each object's release point: the object is carried and let go
  as usual, only where it is let go moves, so a large draw lands it on the rim or beside
  the container (a miss that looks like a placement).

Where each object is let go can also be set outright (``release``: one ``(x, y)`` per plan
step, metres from the container's centre); the policy that GRPO trains in
``examples/embodiment/cpu_learn`` draws them from its learnable Gaussians.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from reward_eval.policies.libero_plans import plan_for
from reward_eval.policies.pick_place import Phase, PickPlaceController
from reward_eval.policies.registry import ACTION_DIM, Policy, register_policy

EXPERT_DROP_PHASES = ("descend", "close", "lift", "carry")


@dataclass(frozen=True)
class Spoiler:
    """The noise knob (see the module docstring); checked on construction."""

    action_noise: float = 0.0
    drop: str | None = None
    drop_prob: float = 1.0
    place_noise: float = 0.0

    def __post_init__(self) -> None:
        if not (isinstance(self.action_noise, (int, float)) and 0.0 <= self.action_noise <= 1.0):
            raise ValueError(f"expert action_noise must be a number in [0, 1], got {self.action_noise!r}.")
        if self.drop is not None and self.drop not in EXPERT_DROP_PHASES:
            raise ValueError(
                f"expert drop {self.drop!r} is not a phase; valid: {', '.join(EXPERT_DROP_PHASES)}."
            )
        if not (isinstance(self.drop_prob, (int, float)) and 0.0 <= self.drop_prob <= 1.0):
            raise ValueError(f"expert drop_prob must be a number in [0, 1], got {self.drop_prob!r}.")
        if not (isinstance(self.place_noise, (int, float)) and 0.0 <= self.place_noise <= 0.2):
            raise ValueError(f"expert place_noise must be metres in [0, 0.2], got {self.place_noise!r}.")
        if self.drop is None and self.drop_prob != 1.0:
            raise ValueError(
                f"expert drop_prob {self.drop_prob!r} needs a drop phase; "
                f"valid drops: {', '.join(EXPERT_DROP_PHASES)}."
            )


class ExpertController:
    """The expert for one episode of ``task``: its plan, whether it drops, and the noise.

    ``seed`` decides the drop, the noise and the release jitter, so an episode is reproducible
    from it. ``dropping`` says whether this episode will drop its last object; ``release`` holds
    where each object is let go (metres from the container's centre, ``release`` argument or
    the plan's, jittered by ``place_noise``).
    """

    def __init__(
        self, task: str, seed: int = 0, release: Sequence[Sequence[float]] | None = None, **spoiler: Any
    ) -> None:
        self.spoiler = Spoiler(**spoiler)
        # Separate streams: whether an episode drops does not change its noise or its release points.
        drop_rng, self._rng, place_rng = (
            np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)
        )
        self.dropping = self.spoiler.drop is not None and drop_rng.random() < self.spoiler.drop_prob
        drop_at = Phase(self.spoiler.drop) if self.dropping else None
        plan = plan_for(task)
        points = release_points(plan, release)
        if self.spoiler.place_noise > 0.0:
            points = points + place_rng.normal(0.0, self.spoiler.place_noise, size=points.shape)
        self.release = tuple((float(x), float(y)) for x, y in points)
        plan = [replace(step, offset=point) for step, point in zip(plan, self.release, strict=True)]
        self._controller = PickPlaceController(plan, drop_at=drop_at)

    @property
    def plan_steps(self) -> list[Any]:
        """The plan this episode runs (the release points in its steps' ``offset``)."""
        return self._controller.plan

    @property
    def phase(self) -> Phase:
        """The phase the controller is in (``Phase.DONE`` after the plan or a drop)."""
        return self._controller.phase

    def act(self, raw_obs: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """The next ``n`` actions, ``(n, 7)`` float32, noise included."""
        actions = self._controller.act(raw_obs, n)
        if self.spoiler.action_noise > 0.0:
            noise = self._rng.normal(0.0, self.spoiler.action_noise, size=(n, 6))
            actions[:, :6] = np.clip(actions[:, :6] + noise, -1.0, 1.0)
        return actions


def release_points(plan: Sequence[Any], release: Sequence[Sequence[float]] | None) -> np.ndarray:
    """``(len(plan), 2)`` release points: ``release`` checked against the plan, else the plan's own."""
    if release is None:
        return np.array([step.offset for step in plan], dtype=float)
    try:
        points = np.asarray(release, dtype=float)
    except (TypeError, ValueError):
        points = np.empty(0)
    if points.shape != (len(plan), 2) or not np.isfinite(points).all():
        raise ValueError(
            f"expert release must be {len(plan)} finite (x, y) points in metres, one per object of the "
            f"plan, got {release!r}."
        )
    return points


@register_policy("expert")
class ExpertPolicy(Policy):
    """A scripted expert per env (see the module docstring), rebuilt at every reset.

    Options (``--policy-kwargs``): ``action_noise``, ``drop``, ``drop_prob``, ``place_noise``, and
    ``release`` (every episode's release points, jittered by ``place_noise``). Each episode
    gets its own seed from ``seed``, so a run is reproducible and its episodes differ.
    A task the expert has no plan for, or a ``release`` that does not fit its plan, fails at the
    reset with what it can take.
    """

    def __init__(
        self, seed: int = 0, release: Sequence[Sequence[float]] | None = None, **spoiler: Any
    ) -> None:
        super().__init__(seed)
        self.spoiler = Spoiler(**spoiler)
        self.release = release
        self._seeds = np.random.default_rng(seed)
        self._experts: list[ExpertController] = []

    def reset(self, env: Any, obs: dict[str, Any]) -> None:
        self._experts = [
            ExpertController(
                task, seed=int(self._seeds.integers(2**31)), release=self.release, **vars(self.spoiler)
            )
            for task in env.task_descriptions
        ]

    def act(self, env: Any, obs: dict[str, Any], chunk: int) -> np.ndarray:
        if len(self._experts) != env.num_envs:
            raise RuntimeError("the expert policy acts before reset(env, obs) was called.")
        actions = np.empty((env.num_envs, chunk, ACTION_DIM), dtype=np.float32)
        for i, expert in enumerate(self._experts):
            actions[i] = expert.act(env.current_raw_obs[i], chunk)
        return actions
