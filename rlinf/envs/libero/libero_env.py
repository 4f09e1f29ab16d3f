"""The project's LIBERO environment: RLinf's ``LiberoEnv`` plus an opt-in VLM reward model."""

from __future__ import annotations

from rlinf._overlay import load_installed_module

_upstream = load_installed_module(__name__)


class LiberoEnv(_upstream.LiberoEnv):
    """RLinf 0.3's LIBERO env, unchanged for now (the reward-model path is added in issue 4)."""
