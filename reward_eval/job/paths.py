"""Where the evaluation app finds the repo: its root, the default env YAML, the rlinf overlay.

The env YAML is the one the commands build on; the rlinf overlay is put first on the import path.

One home for what ``run``, ``rescore`` and ``audit`` all default to (``--env-config``) and for
where run dirs go, so no command imports another for a constant. The package is used from the
repo (``python -m reward_eval`` with the root on ``PYTHONPATH``, or the editable install that
``scripts/setup.sh`` makes for the ``reward-eval`` console script), so the root is this file's
grandparent.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The training configs' root (Hydra's config dir, where the reward_model group lives) and the
# env YAML the commands default to.
CONFIG_ROOT = REPO / "examples" / "embodiment" / "config"
ENV_CONFIG = CONFIG_ROOT / "env" / "libero_10.yaml"


def put_repo_first() -> None:
    """Put the repo root first on ``sys.path`` and on ``PYTHONPATH`` (for the processes the job
    starts), as the shell wrappers do, so ``import rlinf`` finds the repo's overlay and not the
    installed rlinf==0.3.0 underneath (docs/env/overlay.md).

    Needed by the ``reward-eval`` console script: the editable install exposes only the packages
    named in ``pyproject.toml`` (never ``rlinf/``), and the script's own folder is ``.venv/bin``.
    Call it before anything imports ``rlinf``; a root already first is left as it is.
    """
    root = str(REPO)
    if not sys.path or sys.path[0] != root:
        sys.path.insert(0, root)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if parts[:1] != [root]:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *parts])
