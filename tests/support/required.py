"""What the suite needs from the machine: a failure in CI, a skip elsewhere.

``scripts/setup.sh`` installs everything the tests use (apt's shellcheck and chromium, the vLLM
venv), so in CI (``$CI`` set, as ``.ci/run`` runs) a missing tool means set-up broke, and a skip
there would hide it: a green run that never ran the browser or the lint. On a developer's
machine that skipped part of set-up, the test is skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest


def in_ci() -> bool:
    """Whether this is a CI run (``$CI`` set to anything but empty or ``false``)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false")


def missing(reason: str) -> NoReturn:
    """Stop the test because the machine lacks something set-up provides: fail in CI, else skip."""
    if in_ci():
        pytest.fail(f"{reason} (CI runs this test; the README's test command sets it up).")
    pytest.skip(reason)


def require_tool(name: str, package: str) -> str:
    """The path of the command ``name``; :func:`missing` names the apt ``package`` when absent."""
    path = shutil.which(name)
    if path is None:
        missing(f"{name} is not installed (scripts/setup.sh installs Debian's {package} package)")
    return path
