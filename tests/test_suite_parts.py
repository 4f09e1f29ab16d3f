"""Which part of the suite a test runs in (tests/conftest.py's ``--part``, scripts/test.sh's lanes)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.conftest import is_heavy, runs_beside


@dataclass
class FakeItem:
    """The two things the split reads from a collected test: its markers and its fixtures."""

    markers: tuple[str, ...] = ()
    fixturenames: tuple[str, ...] = ()

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.markers else None


@pytest.mark.parametrize(
    ("item", "heavy", "beside"),
    [
        (FakeItem(), False, False),
        (FakeItem(("slow",)), False, False),
        (FakeItem(("libero", "slow")), True, False),
        (FakeItem(("vllm",)), True, False),
        (FakeItem(("libero", "beside")), False, True),
        (FakeItem(("vllm", "beside")), False, True),
        # a session's LIBERO run is never run beside the heavy part, whatever the markers say
        (FakeItem(("libero", "beside"), ("expert_run",)), True, False),
        (FakeItem((), ("reward_eval_run", "tmp_path")), True, False),
    ],
    ids=["plain", "slow", "libero", "vllm", "libero-beside", "vllm-beside", "beside-run", "run-fixture"],
)
def test_the_part_of_a_test(item: FakeItem, heavy: bool, beside: bool) -> None:
    assert is_heavy(item) is heavy  # type: ignore[arg-type]
    assert runs_beside(item) is beside  # type: ignore[arg-type]
