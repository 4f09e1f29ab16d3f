"""``python -m examples.embodiment.reward_eval COMMAND [options]``: see :mod:`.cli`.

Runs :mod:`.cli` as the main module rather than calling its ``main``, so the processes the
job spawns run it first too (its docstring says why).
"""

from __future__ import annotations

import runpy

if __name__ == "__main__":
    runpy.run_module("examples.embodiment.reward_eval.cli", run_name="__main__", alter_sys=True)
