"""What a learning run did, step by step, from its logged scalars: pure, no files.

A ``--cpu-learn`` run (``config/cpu_learn/expert.yaml``) plays one episode per env per GRPO step
(``rollout_epoch: 1``, ``auto_reset: False``), and RLinf logs each env metric as its mean over
that step's episodes. Steps are counted from 1, as RLinf's console counts them (its TensorBoard
step is one less). So per step:

- ``success_rate``: ``env/success_once``, the simulator's success;
- ``judged_success_rate``: ``env/vlm_success``, the judge's (absent without a judge);
- ``false_positive_rate`` and ``recall`` of the judge against the simulator, exact from three
  means over the same episodes: with ``v`` the judged rate, ``n`` the native rate and ``a`` the
  agreement, the judged-yes-native-no share is ``((1 - a) + (v - n)) / 2`` and the
  judged-no-native-yes share ``((1 - a) - (v - n)) / 2`` (``None`` where no native failure,
  resp. success, is behind the rate);
- ``groups_with_gradient``: ``rollout/groups_with_gradient``, the share of GRPO groups the actor
  trained on (not dropped by RLinf's reward filter, advantages not all zero), and
  ``groups_with_spread``: ``rollout/groups_with_spread``, the share whose returns span a tenth of
  ``reward_coef``; both logged by the run's actor (``examples/embodiment/cpu_learn/groups.py``);
- ``fallbacks``: the episodes whose score was the client's fallback, not the judge's
  (``env/vlm_fallback`` x episodes; absent without a judge);
- ``parameters``: the policy's release Gaussians the step's episodes were drawn from
  (``rollout/policy/<mean|std>_<object>_<x|y>``).

The learning comparison's rise and rates with their intervals are
:mod:`reward_eval.analysis.grouped_stats`' (a group of episodes is one draw).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

SUCCESS_TAG = "env/success_once"
EPISODES_TAG = "env/num_trajectories"
JUDGED_TAG = "env/vlm_success"
NATIVE_TAG = "env/native_success"
AGREE_TAG = "env/vlm_native_agree"
GROUPS_TAG = "rollout/groups_with_gradient"
SPREAD_TAG = "rollout/groups_with_spread"
FALLBACK_TAG = "env/vlm_fallback"
GUARD_TAG = "env/vlm_guard_tripped"
PARAMETER_TAG = re.compile(r"^rollout/policy/(mean|std)_(\d+)_([xy])$")

Scalars = Mapping[str, Mapping[int, float]]


def judge_rates(
    judged: float, native: float, agree: float, episodes: int
) -> tuple[float | None, float | None]:
    """(false-positive rate, recall) of a judge from three means over the same ``episodes``."""
    false_yes = ((1.0 - agree) + (judged - native)) / 2.0
    false_no = ((1.0 - agree) - (judged - native)) / 2.0
    failures, successes = (1.0 - native) * episodes, native * episodes
    fpr = None if failures < 0.5 else _rate(false_yes * episodes / failures)
    recall = None if successes < 0.5 else _rate((native - false_no) * episodes / successes)
    return fpr, recall


def _rate(value: float) -> float:
    """A rate from float means, cleared of rounding outside [0, 1]."""
    return min(1.0, max(0.0, round(value, 9)))


def parameters(scalars: Scalars, step: int) -> dict[str, list[list[float]]]:
    """The release Gaussians logged at ``step``: ``{"mean": [[x, y], ...], "std": [...]}``."""
    found: dict[str, dict[int, dict[str, float]]] = {}
    for tag, values in scalars.items():
        match = PARAMETER_TAG.match(tag)
        if match and step in values:
            name, obj, axis = match.group(1), int(match.group(2)), match.group(3)
            found.setdefault(name, {}).setdefault(obj, {})[axis] = float(values[step])
    return {
        name: [[objs[k]["x"], objs[k]["y"]] for k in sorted(objs)] for name, objs in sorted(found.items())
    }


def learning_steps(scalars: Scalars) -> list[dict[str, Any]]:
    """One record per logged training step, keyed as ``learning.json``'s ``steps``."""
    if not scalars.get(SUCCESS_TAG):
        raise ValueError(f"the run logged no {SUCCESS_TAG!r}: not a training run's log dir.")
    steps = []
    for step in sorted(scalars[SUCCESS_TAG]):
        episodes = round(scalars.get(EPISODES_TAG, {}).get(step, 0))
        judged = scalars.get(JUDGED_TAG, {}).get(step)
        fpr = recall = None
        if judged is not None:
            native, agree = scalars[NATIVE_TAG][step], scalars[AGREE_TAG][step]
            fpr, recall = judge_rates(judged, native, agree, episodes)
        groups = scalars.get(GROUPS_TAG, {}).get(step)
        spread = scalars.get(SPREAD_TAG, {}).get(step)
        fallbacks = scalars.get(FALLBACK_TAG, {}).get(step)
        steps.append(
            {
                "step": int(step) + 1,
                "episodes": episodes,
                "success_rate": _rate(scalars[SUCCESS_TAG][step]),
                "judged_success_rate": None if judged is None else _rate(judged),
                "groups_with_gradient": None if groups is None else _rate(groups),
                "groups_with_spread": None if spread is None else _rate(spread),
                "fallbacks": None if fallbacks is None else round(fallbacks * episodes),
                "false_positive_rate": fpr,
                "recall": recall,
                "parameters": parameters(scalars, step),
            }
        )
    return steps


def guard_tripped_at(scalars: Scalars) -> int | None:
    """The first step (counted from 1) at which the reward guard had tripped, or None."""
    tripped = [step for step, value in sorted(scalars.get(GUARD_TAG, {}).items()) if value > 0]
    return tripped[0] + 1 if tripped else None


def first_step_at(steps: Sequence[Mapping[str, Any]], rate: float, key: str = "success_rate") -> int | None:
    """The first step whose ``key`` is at least ``rate`` (steps counted from 1), or None."""
    return next((int(s["step"]) for s in steps if s[key] is not None and s[key] >= rate), None)
