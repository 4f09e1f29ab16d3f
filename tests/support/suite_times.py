"""Where the suite's time went: the slowest tests of its parts, each part's total, the slow list.

    python -m tests.support.suite_times HEAVY.json LIGHT.json

reads what ``pytest --times-json`` wrote for each part (``tests/conftest.py``) and prints, as the
last lines of ``scripts/test.sh``: the :data:`SHOWN` slowest tests of all parts (a test's seconds
are its setup, call and teardown: the first test to need a shared fixture pays for it), each
part's wall time and the sum of its tests' seconds, and every test over
:data:`tests.slow_tests.LIMIT_S` that ``tests/slow_tests.py`` does not name (a contributor adds it
there, with what it proves: the docs render that list).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.slow_tests import LIMIT_S, SLOW_TESTS

SHOWN = 25


@dataclass(frozen=True)
class PartTimes:
    """One part's record: its name, its wall time, each test's seconds and the ``--shuffle`` seed
    it ran with (None: the collected order)."""

    part: str
    wall_s: float
    tests: dict[str, float]
    shuffle: int | None = None

    @classmethod
    def load(cls, path: Path) -> PartTimes:
        record = json.loads(path.read_text())
        tests = {k: float(v) for k, v in record["tests"].items()}
        return cls(record["part"], float(record["wall_s"]), tests, record.get("shuffle"))


def slowest(parts: Sequence[PartTimes], count: int = SHOWN) -> list[tuple[float, str, str]]:
    """``(seconds, part, test)`` of the ``count`` slowest tests over ``parts``, slowest first."""
    rows = [(seconds, p.part, test) for p in parts for test, seconds in p.tests.items()]
    return sorted(rows, key=lambda row: (-row[0], row[2]))[:count]


def unlisted(parts: Sequence[PartTimes], listed: Sequence[str] = ()) -> list[str]:
    """The tests over :data:`LIMIT_S` that ``listed`` does not name (a parametrized test's cases
    are named by its function), slowest first."""
    listed = listed or tuple(t.test for t in SLOW_TESTS)
    over = [row for row in slowest(parts, count=sys.maxsize) if row[0] > LIMIT_S]
    return [test for _, _, test in over if test.split("[")[0] not in listed]


def report(parts: Sequence[PartTimes]) -> list[str]:
    """The lines :func:`main` prints."""
    lines = [f"[test] the {SHOWN} slowest tests (seconds: setup + call + teardown, part):"]
    lines += [f"{seconds:8.1f}  {part:5}  {test}" for seconds, part, test in slowest(parts)]
    for p in parts:
        lines.append(
            f"[test] {p.part} part: {len(p.tests)} tests in {p.wall_s:.0f} s "
            f"({sum(p.tests.values()):.0f} s in the tests themselves)"
        )
    seeds = {p.shuffle for p in parts} - {None}
    if seeds:
        # The list names the test that pays for a shared run in the collected order; shuffled,
        # another of its tests may run first and pay.
        lines.append(f"[test] shuffled (seed {min(seeds)}): the slow list is not checked")
        return lines
    missing = unlisted(parts)
    if missing:
        lines.append(f"[test] over {LIMIT_S:.0f} s and not in tests/slow_tests.py (add each there):")
        lines += [f"  {test}" for test in missing]
    return lines


def main(argv: Sequence[str]) -> int:
    paths = [Path(a) for a in argv if Path(a).is_file()]  # a part that never started wrote none
    if not paths:
        print("[test] no part recorded its times", file=sys.stderr)
        return 0
    print("\n".join(report([PartTimes.load(p) for p in paths])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
