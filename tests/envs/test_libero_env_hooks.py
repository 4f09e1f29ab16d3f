"""What ``LiberoEnv`` takes from RLinf's class: the hooks it overrides, and the worker's rank.

Imports LIBERO's modules (RLinf's ``libero_env``) but runs no simulator.
"""

from __future__ import annotations

import sys

import pytest

HOOKS = {"reset", "step", "chunk_step", "_handle_auto_reset", "_calc_step_reward", "close"}


@pytest.fixture(scope="module")
def envs() -> tuple[type, type]:
    """(ours, RLinf 0.3's) ``LiberoEnv``."""
    from rlinf.envs.libero.libero_env import LiberoEnv

    return LiberoEnv, sys.modules["rlinf.envs.libero._installed_libero_env"].LiberoEnv


def test_only_the_documented_hooks_are_overridden(envs: tuple[type, type]) -> None:
    ours, rlinf = envs
    overridden = {name for name in vars(ours) if name in dir(rlinf) and not name.startswith("__")}
    assert overridden == HOOKS


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_each_hook_names_the_rlinf_method_it_depends_on(envs: tuple[type, type], hook: str) -> None:
    doc = vars(envs[0])[hook].__doc__ or ""
    assert f"``{hook}" in doc or f"``LiberoEnv.{hook}" in doc, doc
