"""Judge-only mode of ``--cpu-learn`` runs (``cpu_learn.judge_only: True``): the judge alone decides.

In the default mode LIBERO ends an episode at the simulator's success (``ignore_terminations:
False``), as the mission's env does: a judged run's reward is the judge's, but when an episode ends
is the simulator's. A judge on a real robot has no such signal. In judge-only mode:

* ``env.train.ignore_terminations: True`` (RLinf's): the simulator's success is recorded
  (``success_once``, and ``success_at_end``) and never ends an episode; every episode runs to
  ``max_episode_steps`` and is scored at its truncation, so neither its reward, nor its end, nor
  its length, nor its weight in the loss carries the simulator's success;
* ``env.train.simulation.step_ended_episodes: True``: there are no ended episodes to hold;
* a judged run never falls back to the simulator's reward: with ``fallback_score: null`` (the
  episode's native success) the mode sets ``fail_on_request_error: True``; a guard must ``warn``
  (its ``native`` action hands the simulator's reward back, ``stop`` ends the run on it).

A native run in this mode is RLinf's own reward with ``ignore_terminations: True``.
"""

from __future__ import annotations

from typing import Any

from omegaconf import OmegaConf, open_dict

ENABLE_KEY = "cpu_learn.judge_only"
FORCED = {"env.train.ignore_terminations": True, "env.train.simulation.step_ended_episodes": True}


def is_judge_only(cfg: Any) -> bool:
    """Whether ``cfg`` asks for judge-only mode; TypeError for a value that is not a bool."""
    value = OmegaConf.select(cfg, ENABLE_KEY, default=False)
    if not isinstance(value, bool):
        raise TypeError(f"{ENABLE_KEY} must be true or false, got {value!r}.")
    return value


def apply_judge_only(cfg: Any) -> list[str]:
    """Set what the mode needs in ``cfg`` (in place); the ``key=value`` settings it changed.

    ValueError for a reward guard whose action is not ``warn``.
    """
    if not is_judge_only(cfg):
        return []
    changed = [f"{key}={value}" for key, value in FORCED.items() if OmegaConf.select(cfg, key) != value]
    with open_dict(cfg):
        for key, value in FORCED.items():
            OmegaConf.update(cfg, key, value, force_add=True)
        block = cfg.env.train.get("reward_model") or {}
        if block.get("enable", False):
            changed += _no_native_fallback(block)
    return changed


def _no_native_fallback(block: Any) -> list[str]:
    guard = block.get("guard") or {}
    if guard.get("enable", False) and guard.get("action", "warn") != "warn":
        raise ValueError(
            f"{ENABLE_KEY}: reward_model.guard.action {guard.get('action')!r} hands the simulator's success "
            "back to training or stops on it; use 'warn' (or guard.enable: false)."
        )
    if block.get("fallback_score") is None and not block.get("fail_on_request_error", False):
        block["fail_on_request_error"] = True
        return ["env.train.reward_model.fail_on_request_error=True"]
    return []
