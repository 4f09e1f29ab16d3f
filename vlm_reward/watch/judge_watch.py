"""The live watch of the judge that one env feeds: health metrics, canaries and the guard.

``LiberoEnv`` builds one :class:`JudgeWatch` when the reward model is on and calls it at four
points, nothing more:

- :meth:`JudgeWatch.new_chunk` when a ``chunk_step`` (or a lone ``step``) begins;
- :meth:`JudgeWatch.canary_for` when an episode ends: the perturbation of its canary, if it
  gets one (native successes only), then :meth:`JudgeWatch.canary_started` with the call's
  future; canaries run on the client's threads like every call and are collected with the
  episodes (:meth:`JudgeWatch.collect_canaries`);
- :meth:`JudgeWatch.episode` for each collected episode, in env order: it updates the health
  windows and the guard and answers whether the episode may train on the judge's verdict
  (``False`` from the episode that trips a ``native`` or ``stop`` guard on: the env then uses
  the native success as the signal, exactly the native reward);
- :meth:`JudgeWatch.metrics` for ``infos["episode"]`` (:data:`WATCH_METRIC_KEYS` and the
  per-task rates).

The guard watches only episodes that train on the judge: not in shadow mode
(``use_for_training: False``), not in an evaluation env. When it trips it logs one warning
with the numbers and the env step; ``stop`` also sets :attr:`JudgeWatch.stop_request`, which
the training entry point reads after each step (it cannot be raised from inside a worker:
RLinf's driver would hang).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from vlm_reward.client.config import RewardModelConfig
from vlm_reward.client.episode_record import Judgement
from vlm_reward.exit_statuses import EXIT_GUARD_STOP
from vlm_reward.verdict import is_success
from vlm_reward.watch.canaries import CanaryPlan
from vlm_reward.watch.guard import GuardEvent, RewardGuard
from vlm_reward.watch.judge_health import HEALTH_METRIC_KEYS, HEALTH_METRICS, TASK_METRICS, JudgeHealth

logger = logging.getLogger(__name__)

GUARD_TRIPPED = "vlm_guard_tripped"
# Every key JudgeWatch.metrics writes and its meaning (the docs' table is rendered from this dict).
WATCH_METRICS: dict[str, str] = {
    **HEALTH_METRICS,
    GUARD_TRIPPED: "1 while the reward guard is tripped.",
    **TASK_METRICS,
}
WATCH_METRIC_KEYS = (*HEALTH_METRIC_KEYS, GUARD_TRIPPED)

_CONSEQUENCE = {
    "warn": "Action warn: training goes on with the judge's reward.",
    "native": "Action native: from now on every episode trains on the native reward (its VLM score "
    "is still logged).",
    "stop": "Action stop: every episode trains on the native reward until the run ends after this "
    f"training step's checkpoint, with exit status {EXIT_GUARD_STOP}.",
}


@dataclass(frozen=True)
class Canary:
    """A canary in flight: the ended episode it was made from, and how."""

    env: int
    task_id: int
    perturbation: str


@dataclass(frozen=True)
class ScoredCanary:
    """A collected canary and its judgement (never trained on)."""

    canary: Canary
    result: Judgement


class JudgeWatch:
    """What one env knows about its judge while it trains (see the module docstring)."""

    def __init__(self, cfg: RewardModelConfig, task_ids: Sequence[int], seed: int, training: bool) -> None:
        self.task_ids, self.seed, self.training = tuple(task_ids), seed, training
        self.cfg = cfg
        self.health = JudgeHealth(cfg.health_window, self.task_ids)
        self.plan = self._plan(cfg)
        self.guard = self._guard(cfg)
        self.stop_request: str | None = None
        self._pending: list[tuple[Canary, Future]] = []

    # ---- configuration --------------------------------------------------------------

    def reconfigure(self, cfg: RewardModelConfig) -> None:
        """New settings between episodes; what they leave unchanged keeps its state (the
        windows, the canary draws, a tripped guard)."""
        old, self.cfg = self.cfg, cfg
        if cfg.health_window != old.health_window:
            self.health = JudgeHealth(cfg.health_window, self.task_ids)
        canaries = ("canary_rate", "canary_perturbations", "canary_max_per_chunk")
        if any(getattr(cfg, key) != getattr(old, key) for key in canaries):
            self.plan = self._plan(cfg)
        if (cfg.guard, cfg.use_for_training) != (old.guard, old.use_for_training):
            self.guard, self.stop_request = self._guard(cfg), None

    def _plan(self, cfg: RewardModelConfig) -> CanaryPlan | None:
        if cfg.canary_rate == 0.0:
            return None
        return CanaryPlan(cfg.canary_rate, cfg.canary_perturbations, cfg.canary_max_per_chunk, self.seed)

    def _guard(self, cfg: RewardModelConfig) -> RewardGuard | None:
        if not cfg.guard.enable:
            return None
        if not (self.training and cfg.use_for_training):
            logger.warning(
                "reward_model.guard is enabled, but this env does not train on the judge (%s): "
                "the guard stays off here; the health metrics are still logged.",
                "an evaluation env" if not self.training else "shadow mode, use_for_training: False",
            )
            return None
        return RewardGuard(cfg.guard)

    # ---- the env's calls --------------------------------------------------------------

    def new_chunk(self) -> None:
        """A ``chunk_step`` (or a lone ``step``) begins: the canary cap counts from zero."""
        if self.plan is not None:
            self.plan.new_chunk()

    def canary_for(self, native_success: bool) -> str | None:
        """The perturbation of the canary of an episode that just ended, or ``None``."""
        if not native_success or self.plan is None:
            return None
        return self.plan.choose()

    def canary_started(self, canary: Canary, future: Future) -> None:
        """``canary``'s scoring call is running; it is collected by :meth:`collect_canaries`."""
        self._pending.append((canary, future))

    def episode(self, task_id: int, native_success: bool, result: Judgement, step: int) -> bool:
        """One collected episode; whether it may train on the judge's verdict (see the module
        docstring). ``step`` is the env's step count, for the guard's message."""
        judged = None if result.fallback else is_success(result.score, self.cfg.success_threshold)
        self.health.episode(task_id, native_success, judged)
        if judged is not None:
            self._guard_sees(judged, native_success, step)
        return not self.distrusts_judge

    def collect_canaries(self, step: int) -> list[ScoredCanary]:
        """Wait for every canary in flight; record each in the health (and the guard when it
        counts canaries). Raises the first failed call's error once all are done, as the
        episodes' collection does."""
        pending, self._pending = self._pending, []
        results, errors = [], []
        for canary, future in pending:
            try:
                results.append(ScoredCanary(canary, future.result()))
            except Exception as exc:  # re-raised below, once every call is done
                errors.append(exc)
        if errors:
            raise errors[0]
        for scored in results:
            result = scored.result
            judged = None if result.fallback else is_success(result.score, self.cfg.success_threshold)
            self.health.canary(judged)
            if judged is not None and self.cfg.guard.count_canaries:
                self._guard_sees(judged, False, step)
        return results

    def abandon(self) -> None:
        """After a failed chunk: wait for the canaries in flight and drop them."""
        pending, self._pending = self._pending, []
        for _, future in pending:
            with contextlib.suppress(Exception):  # the chunk failed already; that error is raised
                future.result()

    # ---- state ------------------------------------------------------------------------

    @property
    def distrusts_judge(self) -> bool:
        """Whether a ``native`` or ``stop`` guard has tripped: episodes train on the native reward."""
        return self.guard is not None and self.guard.distrusts_judge

    def metrics(self) -> dict[str, float]:
        """The values for ``infos["episode"]``: :data:`WATCH_METRIC_KEYS` (but a rate with no
        episodes behind it, which is absent), then the per-task counts and rates."""
        per_task = self.health.metrics()
        overall = {key: per_task.pop(key) for key in HEALTH_METRIC_KEYS if key in per_task}
        tripped = float(self.guard is not None and self.guard.tripped)
        return {**overall, GUARD_TRIPPED: tripped, **per_task}

    def _guard_sees(self, judged: bool, native_success: bool, step: int) -> None:
        if self.guard is None or self.guard.distrusts_judge:
            return  # nothing left to decide once the judge is distrusted
        event = self.guard.observe(judged, native_success)
        if event is not None:
            self._act(event, step)

    def _act(self, event: GuardEvent, step: int) -> None:
        message = f"{event.describe(self.cfg.guard)} At env step {step}. {self._rates()}."
        if event.kind == "cleared":
            logger.warning(message)
            return
        message = f"{message} {_CONSEQUENCE[event.action]}"
        logger.warning(message)
        if event.action == "stop":
            self.stop_request = message

    def _rates(self) -> str:
        """The health window's rates, for the guard's message."""
        overall, canaries = self.health.overall, self.health.canaries
        parts = [
            f"Health window (last {len(overall)} judged episodes): false-positive rate "
            f"{_rate_text(overall.false_positive_rate)}, false-negative rate "
            f"{_rate_text(overall.false_negative_rate)}"
        ]
        if len(canaries):
            parts.append(f"canary false-positive rate {_rate_text(canaries.false_positive_rate)}")
        return ", ".join(parts)


def _rate_text(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.3f}"
