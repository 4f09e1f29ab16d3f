"""tests/support/suite_times.py: the slowest tests of both parts, each part's total, the slow list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.slow_tests import LIMIT_S
from tests.support.suite_times import PartTimes, main, report, slowest, unlisted

HEAVY = PartTimes("heavy", 900.0, {"tests/a.py::test_run": 400.0, "tests/a.py::test_check": 0.5})
LIGHT = PartTimes(
    "light", 300.0, {"tests/b.py::test_x[1]": 70.0, "tests/b.py::test_x[2]": 2.0, "tests/c.py::t": 61.0}
)


def test_the_slowest_come_first_across_parts() -> None:
    assert slowest([HEAVY, LIGHT], count=3) == [
        (400.0, "heavy", "tests/a.py::test_run"),
        (70.0, "light", "tests/b.py::test_x[1]"),
        (61.0, "light", "tests/c.py::t"),
    ]


CASES = [
    ("none_listed", (), ["tests/a.py::test_run", "tests/b.py::test_x[1]", "tests/c.py::t"]),
    (
        "a_parametrized_test_by_its_function",
        ("tests/b.py::test_x",),
        ["tests/a.py::test_run", "tests/c.py::t"],
    ),
    ("all_listed", ("tests/a.py::test_run", "tests/b.py::test_x", "tests/c.py::t"), []),
]


@pytest.mark.parametrize(("listed", "missing"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_tests_over_the_limit_that_the_list_does_not_name(
    listed: tuple[str, ...], missing: list[str]
) -> None:
    assert LIMIT_S == 60.0
    assert unlisted([HEAVY, LIGHT], listed or ("nothing",)) == missing


def test_the_report_ends_with_each_part_and_what_is_missing_from_the_list() -> None:
    lines = report([HEAVY, LIGHT])
    assert (
        lines[0].startswith("[test] the 25 slowest tests")
        and "   400.0  heavy  tests/a.py::test_run" in lines
    )
    assert "[test] heavy part: 2 tests in 900 s (400 s in the tests themselves)" in lines
    assert "[test] light part: 3 tests in 300 s (133 s in the tests themselves)" in lines


def test_the_command_reads_the_parts_it_finds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "heavy.json").write_text(
        json.dumps({"part": "heavy", "wall_s": 12.0, "tests": {"t::a": 1.5}})
    )
    assert main([str(tmp_path / "heavy.json"), str(tmp_path / "light.json")]) == 0  # light never started
    assert "[test] heavy part: 1 tests in 12 s" in capsys.readouterr().out
    assert main([str(tmp_path / "none.json")]) == 0
    assert "no part recorded its times" in capsys.readouterr().err


def test_a_shuffled_run_does_not_check_the_slow_list() -> None:
    """Shuffled, a shared run is paid by whichever of its tests runs first, not the listed one."""
    shuffled = PartTimes("heavy", 900.0, HEAVY.tests, shuffle=7)
    lines = report([shuffled, LIGHT])
    assert lines[-1] == "[test] shuffled (seed 7): the slow list is not checked"
    assert not any("not in tests/slow_tests.py" in line for line in lines)
    assert any("not in tests/slow_tests.py" in line for line in report([HEAVY, LIGHT]))
