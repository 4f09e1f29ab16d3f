"""The CPU hooks' wait for a collective group's peer (examples/embodiment/cpu_smoke/collective_wait.py).

RLinf's ``Collective`` is patched in this process by ``install()``, so the tests that install it
restore it through ``monkeypatch``; the waits run against a stand-in manager, with no Ray.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from examples.embodiment.cpu_smoke import collective_wait


@pytest.mark.parametrize(
    ("first", "cap", "expected"),
    [
        (0.001, 0.05, [0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.05, 0.05]),
        (0.01, 0.01, [0.01] * 8),
        (0.02, 0.05, [0.02, 0.04, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05]),
    ],
    ids=["defaults", "flat", "capped-early"],
)
def test_the_delays_double_from_the_first_up_to_the_cap(first: float, cap: float, expected: list) -> None:
    delays = list(itertools.islice(collective_wait.poll_delays(first, cap), len(expected)))
    assert delays == pytest.approx(expected)


class _Manager:
    """Answers ``None`` (the peer has not registered the group) ``misses`` times, then the group."""

    def __init__(self, misses: int) -> None:
        self.misses, self.calls = misses, []

    def get_collective_group(self, name: str) -> object:
        self.calls.append(name)
        return None if len(self.calls) <= self.misses else {"group": name}


@pytest.mark.parametrize("misses", [0, 1, 9], ids=["ready", "one-miss", "minutes-away"])
def test_the_wait_asks_until_the_group_exists_sleeping_the_backed_off_delays(
    monkeypatch: pytest.MonkeyPatch, misses: int
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(collective_wait.time, "sleep", slept.append)
    collective = SimpleNamespace(_coll_manager=_Manager(misses), _logger=None)
    info = collective_wait._group_info_with_backoff(collective, "cg-actor-env")
    assert info == {"group": "cg-actor-env"}
    assert collective._coll_manager.calls == ["cg-actor-env"] * (misses + 1)
    assert slept == list(itertools.islice(collective_wait.poll_delays(), misses))
    assert max(slept, default=0.0) <= collective_wait.MAX_POLL_S


def test_install_replaces_rlinfs_wait_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlinf.scheduler.collective.collective import Collective

    original = Collective._get_group_info_safe
    monkeypatch.setattr(Collective, "_get_group_info_safe", original)
    collective_wait.install()
    installed = Collective._get_group_info_safe
    collective_wait.install()  # RLinf calls the hook once per Worker in a process
    assert installed is Collective._get_group_info_safe is collective_wait._group_info_with_backoff
    assert installed is not original
