"""``python -m reward_eval COMMAND [options]`` and the ``reward-eval`` console script: see :mod:`.cli`.

Runs :mod:`.cli` as the main module rather than calling its ``main``, so the processes the
job spawns run it first too (its docstring says why). The console script calls :func:`main`,
which does the same after putting the repo (and so the rlinf overlay) first on the import path.
"""

from __future__ import annotations

import runpy

from reward_eval.job.paths import put_repo_first


def main() -> None:
    """Entry point of ``reward-eval`` (``[project.scripts]``): the repo first, then :mod:`.cli`
    as ``__main__``; exits with the command's status (``SystemExit`` from :mod:`.cli`)."""
    put_repo_first()
    runpy.run_module("reward_eval.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
