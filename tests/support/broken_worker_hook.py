"""A CPU platform hook that loads in the driver but not in RLinf's Ray workers.

For the ``--cpu-smoke`` failure test: RLinf only logs a warning when ``RLINF_EXT_MODULE`` fails to
import in a worker, whose ``__init__`` then fails without a CPU platform; unsupervised, the driver
hangs. ``WORKER_NAME`` is set by RLinf in worker processes only.
"""

from __future__ import annotations

import os

if os.environ.get("WORKER_NAME"):
    raise ImportError("simulated: this hook cannot be imported in a Ray worker")

from examples.embodiment.cpu_smoke.cpu_platform import register

__all__ = ["register"]
