"""Canaries: native successes also judged as a counterfactual that must read as a failure.

With ``reward_model.canary_rate: p`` each native success is, with probability ``p``, sent a
second time as one of the audit's counterfactuals (:mod:`vlm_reward.perturbations`: played
backwards, frozen, cut in half, ...). The canary goes to the same servers as the episodes and
is never trained on; a judge that calls it a success is fooled by exactly what a reward
hacker would try, on the policy's own current behaviour.

- :class:`CanaryPlan` decides: a seeded draw per native success (the same run draws the same
  canaries), the perturbations taken in turn from ``canary_perturbations``, and at most
  ``canary_max_per_chunk`` canaries per ``chunk_step`` (:meth:`CanaryPlan.new_chunk`), which
  bounds what canaries cost.
- :func:`canary_counterfactual` makes one: the frames the client would send for the episode
  (:func:`vlm_reward.frames.evenly_spaced`, ``nframes`` of them), perturbed, as the audit
  perturbs a kept video's frames. ``None`` when the perturbation does not apply (``wrong_task``
  in a suite of one task).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vlm_reward.frames import evenly_spaced
from vlm_reward.perturbations import Counterfactual, Source, perturb


class CanaryPlan:
    """Which native successes become canaries, and as what (see the module docstring)."""

    def __init__(self, rate: float, perturbations: Sequence[str], max_per_chunk: int, seed: int) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"canary rate must be in [0, 1], got {rate!r}.")
        if not perturbations:
            raise ValueError("canaries need at least one perturbation.")
        self.rate, self.perturbations, self.max_per_chunk = rate, tuple(perturbations), max_per_chunk
        self._rng = np.random.default_rng(seed)
        self._next = 0  # the perturbation the next canary takes
        self._this_chunk = 0
        self.capped = 0  # drawn canaries dropped by the cap, in all

    def new_chunk(self) -> None:
        """A ``chunk_step`` begins: the cap counts from zero again."""
        self._this_chunk = 0

    def choose(self) -> str | None:
        """For one native success: the perturbation of its canary, or ``None`` (no canary).

        Every native success draws once (also when the cap is reached), so which episodes are
        drawn does not depend on the cap.
        """
        if self.rate == 0.0:
            return None
        drawn = bool(self._rng.random() < self.rate)
        if not drawn:
            return None
        if self._this_chunk >= self.max_per_chunk:
            self.capped += 1
            return None
        self._this_chunk += 1
        name = self.perturbations[self._next % len(self.perturbations)]
        self._next += 1
        return name


def canary_counterfactual(
    frames: Sequence[np.ndarray],
    task_text: str,
    perturbation: str,
    nframes: int,
    hard_negative: str | None = None,
    seed: tuple[int, ...] = (0,),
) -> Counterfactual | None:
    """The canary of an episode whose main images are ``frames`` (oldest first): the ``nframes``
    frames the client sends for it, perturbed; ``None`` if ``perturbation`` does not apply."""
    sent = np.stack([np.asarray(frames[i]) for i in evenly_spaced(len(frames), nframes)])
    return perturb(perturbation, Source(sent, task_text, hard_negative, seed))
