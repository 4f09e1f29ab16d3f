"""``scripts/openmp.sh``: idle OpenMP threads sleep (``OMP_WAIT_POLICY=PASSIVE``) in every script
that runs two CPU-heavy processes at once, unless the caller chose a policy."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"


def _policy_after(source: Path, **env: str) -> str:
    """``OMP_WAIT_POLICY`` as a child process sees it after ``source``-ing ``source``."""
    base = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    result = subprocess.run(
        ["bash", "-c", f"set -euo pipefail; source {source}; bash -c 'echo \"${{OMP_WAIT_POLICY:-unset}}\"'"],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=True,
    )
    return result.stdout.strip()


@pytest.mark.parametrize(
    ("env", "policy"),
    [({}, "PASSIVE"), ({"OMP_WAIT_POLICY": "ACTIVE"}, "ACTIVE")],
    ids=["unset-is-passive", "the-callers-kept"],
)
@pytest.mark.parametrize("source", ["openmp.sh", "setup.sh"])
def test_the_policy_is_exported_to_children(source: str, env: dict[str, str], policy: str) -> None:
    assert _policy_after(SCRIPTS / source, **env) == policy


@pytest.mark.parametrize("script", ["test.sh", "run.sh"])
def test_the_entry_points_source_it_before_set_up_runs(script: str) -> None:
    """They are run, not sourced: the policy must be exported before set-up's first process."""
    lines = [line.strip() for line in (SCRIPTS / script).read_text().splitlines()]
    sourced = next(i for i, line in enumerate(lines) if line.startswith("source") and "openmp.sh" in line)
    set_up = next(i for i, line in enumerate(lines) if "setup.sh" in line and " bash " in f" {line} ")
    assert sourced < set_up
