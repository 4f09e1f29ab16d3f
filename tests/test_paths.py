"""tests/paths.py: every production path's tests exist and the README's test command runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import PATHS
from tests.support.collected import COLLECTED, OUT_ENV
from tests.support.server import REPO

NAMED = sorted({test for path in PATHS for test in path.tests})


def _collected_here(config: pytest.Config) -> dict[str, str | None] | None:
    """This run's collection, if it collected the whole suite (the README's command does)."""
    whole = [str(REPO / p) for p in config.getini("testpaths")]
    if sorted(str(Path(a).resolve()) for a in config.args) != sorted(whole) or COLLECTED not in config.stash:
        return None
    return config.stash[COLLECTED]


def _collect(files: list[str], tmp_path: Path) -> dict[str, str | None]:
    """The files' tests as pytest collects them, in a subprocess (this run collected fewer)."""
    out = tmp_path / "collected.json"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "tests.support.collected", *files],
        cwd=REPO,
        env={**os.environ, OUT_ENV: str(out)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def collected(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str | None]:
    here = _collected_here(request.config)
    if here is not None:
        return here
    files = sorted({test.split("::")[0] for test in NAMED})
    return _collect(files, tmp_path_factory.mktemp("collect"))


def test_every_path_names_tests_in_files_that_exist() -> None:
    assert len({p.path for p in PATHS}) == len(PATHS), "a path is listed twice"
    for path in PATHS:
        assert path.tests, path.path
        for test in path.tests:
            assert (REPO / test.split("::")[0]).is_file(), test


def test_every_named_test_is_collected_and_no_mark_skips_it(collected: dict[str, str | None]) -> None:
    for test in NAMED:
        cases = {
            node: skip for node, skip in collected.items() if node == test or node.startswith(f"{test}[")
        }
        assert cases, f"{test} is named in tests/paths.py but not collected"
        skipped = {node: skip for node, skip in cases.items() if skip is not None}
        assert not skipped, f"marks skip {skipped} on every machine"


def test_the_readme_command_deselects_nothing(pytestconfig: pytest.Config) -> None:
    """scripts/test.sh gives pytest no -m or -k (its parts split the suite, they drop nothing), and
    neither does pyproject.toml's addopts."""
    addopts = pytestconfig.getini("addopts")
    assert not {"-m", "-k"} & set(addopts), addopts
    script = (REPO / "scripts" / "test.sh").read_text()
    calls = [line for line in script.splitlines() if '"${PYTEST[@]}"' in line]
    assert calls and not any(" -m " in call or " -k " in call for call in calls), calls
