"""reward_eval.progress_bar: a live bar on a terminal, a few lines in a log, whatever the pace.

tqdm redraws when enough time has passed, so the clock here advances one second per reading: every
update is "slow", as in a rollout or a training step, and tqdm's own bar redraws at each one. Each
redraw starts with a carriage return, which a log shows as a line.
"""

from __future__ import annotations

import io
import itertools
import sys
from collections.abc import Callable

import pytest
import tqdm.std

from reward_eval.progress_bar import LOG_LINES, progress_bar

STEPS = 192  # set-up's classifier training: 192 steps


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def stderr(monkeypatch: pytest.MonkeyPatch) -> Callable[[io.StringIO], io.StringIO]:
    """Make a stream stderr, and tqdm's clock one that moves a second per reading."""
    ticks = itertools.count()
    monkeypatch.setattr(tqdm.std, "time", lambda: float(next(ticks)))

    def use(stream: io.StringIO) -> io.StringIO:
        monkeypatch.setattr(sys, "stderr", stream)
        return stream

    return use


def _run(steps: int, initial: int = 0) -> None:
    with progress_bar(STEPS, "train", "step", initial=initial, postfix={"loss": "-"}) as bar:
        for step in range(initial, initial + steps):
            bar.set_postfix(loss=f"{1 / (step + 1):.4f}", refresh=False)
            bar.update(1)


def test_in_a_log_a_bar_writes_its_start_each_quarter_and_its_end(stderr) -> None:
    log = stderr(io.StringIO())
    _run(STEPS)
    lines = log.getvalue().split("\r")[1:]
    assert len(lines) <= LOG_LINES + 2, lines  # the start, one per quarter, the close
    assert "0/192" in lines[0] and "loss=-" in lines[0]
    assert f"{STEPS}/{STEPS}" in lines[-1] and f"loss={1 / STEPS:.4f}" in lines[-1]


def test_a_resumed_bar_counts_the_quarters_of_what_is_left(stderr) -> None:
    log = stderr(io.StringIO())
    _run(STEPS // 2, initial=STEPS // 2)
    lines = log.getvalue().split("\r")[1:]
    assert len(lines) <= LOG_LINES + 2 and "96/192" in lines[0] and "192/192" in lines[-1]


def test_on_a_terminal_it_is_tqdm_s_live_bar(stderr) -> None:
    """The contrast that makes the log's bound mean something: at this pace tqdm redraws every update."""
    terminal = stderr(Terminal())
    _run(STEPS)
    assert terminal.getvalue().count("\r") > STEPS
