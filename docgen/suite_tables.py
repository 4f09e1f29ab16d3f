"""The test suite's two tables, from their one definition each: the production paths and the tests
that run them (``tests/paths.py``), and the tests over a minute (``tests/slow_tests.py``).

Pure: text from values.
"""

from __future__ import annotations

from collections.abc import Iterable

from docgen.markdown import code, table
from tests.paths import ProductionPath
from tests.slow_tests import SlowTest


def _test_name(node_id: str) -> str:
    """``tests/envs/test_x.py::test_y`` as ``envs/test_x.py::test_y`` in a code span."""
    return code(node_id.removeprefix("tests/"))


def path_table(paths: Iterable[ProductionPath]) -> str:
    """One row per path: what a user runs, the engine its tests run it on, the tests."""
    rows = [(p.path, p.engine, "<br>".join(_test_name(t) for t in p.tests)) for p in paths]
    return table(("path", "run on", "tests"), rows)


def slow_table(slow: Iterable[SlowTest]) -> str:
    """One row per slow test, slowest first: its seconds, the test, what it pays for, what it proves."""
    rows = [
        (f"{s.seconds}", _test_name(s.test), s.pays_for, s.proves)
        for s in sorted(slow, key=lambda s: (-s.seconds, s.test))
    ]
    return table(("s", "test", "pays for", "proves"), rows)
