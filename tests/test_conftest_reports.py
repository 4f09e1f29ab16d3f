"""tests/conftest.py's reports (a failed shared fixture once, a hung test by name, the times file)
and its ``--shuffle``.

Each report's case is a small test module run by pytest in a subprocess with this suite's conftest loaded
as a plugin (``-p tests.conftest``), as the suite itself runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from tests.conftest import shuffled
from tests.support.server import REPO

FAILING_FIXTURE = """
import pytest

@pytest.fixture(scope="module")
def shared():
    raise ValueError("the shared run could not start: the cause")

def test_one(shared): pass
def test_two(shared): pass
def test_three(shared): pass
"""

HANGING = """
import time
import pytest

@pytest.mark.timeout(2)
def test_hangs():
    time.sleep(60)

def test_after_it():
    pass
"""


def _pytest(tmp_path: Path, module: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_case.py").write_text(module)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider", "-q", *args],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_failed_shared_fixture_is_reported_once_with_its_cause(tmp_path: Path) -> None:
    result = _pytest(tmp_path, FAILING_FIXTURE, "test_case.py")
    out = result.stdout
    assert result.returncode == 1 and "3 errors" in out, out[-3000:]
    raised = [line for line in out.splitlines() if line.startswith("E ") and "the cause" in line]
    assert len(raised) == 1, out[-3000:]  # the traceback once (the summary lines name each test)
    pointer = (
        "a fixture this test needs failed at test_case.py::test_one: its error and cause are reported there"
    )
    assert out.splitlines().count(pointer) == 2, out[-3000:]


def test_a_hung_test_fails_with_its_name_and_where_it_hung_and_the_rest_go_on(tmp_path: Path) -> None:
    result = _pytest(tmp_path, HANGING, "test_case.py")
    out = result.stdout + result.stderr
    assert result.returncode == 1 and "1 failed, 1 passed" in out, out[-3000:]
    assert "Timeout (>2.0s)" in out and "test_hangs" in out and "time.sleep(60)" in out


def test_every_test_has_a_time_limit() -> None:
    options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert 0 < float(options["timeout"]) <= 900


def test_the_times_file_has_each_test_s_seconds_and_the_part(tmp_path: Path) -> None:
    times = tmp_path / "times.json"
    result = _pytest(
        tmp_path,
        HANGING.replace("time.sleep(60)", "time.sleep(0.3)"),
        "test_case.py",
        "--times-json",
        str(times),
    )
    assert result.returncode == 0, result.stdout[-3000:]
    record = json.loads(times.read_text())
    assert record["part"] == "all" and record["wall_s"] > 0.3
    assert set(record["tests"]) == {"test_case.py::test_hangs", "test_case.py::test_after_it"}
    assert record["tests"]["test_case.py::test_hangs"] >= 0.3


class _Item:
    """What ``shuffled`` reads of a collected test: its node id and its markers."""

    def __init__(self, nodeid: str, last: bool = False) -> None:
        self.nodeid, self.last = nodeid, last

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == "runs_last" and self.last else None


@pytest.mark.parametrize("seed", range(5), ids=lambda seed: f"seed-{seed}")
def test_shuffle_keeps_modules_together_and_a_runs_last_test_last(seed: int) -> None:
    items = [_Item(f"a.py::t{i}", last=i == 0) for i in range(6)] + [_Item(f"b.py::t{i}") for i in range(6)]
    order = [item.nodeid for item in shuffled(items, seed)]
    assert sorted(order) == sorted(item.nodeid for item in items)
    modules = [nodeid.split("::")[0] for nodeid in order]
    assert modules in (["a.py"] * 6 + ["b.py"] * 6, ["b.py"] * 6 + ["a.py"] * 6)
    in_a = [nodeid for nodeid in order if nodeid.startswith("a.py")]
    assert in_a[-1] == "a.py::t0", in_a


def test_the_shuffle_draws_different_orders() -> None:
    items = [_Item(f"a.py::t{i}") for i in range(8)]
    orders = {tuple(item.nodeid for item in shuffled(items, seed)) for seed in range(5)}
    assert len(orders) > 1
