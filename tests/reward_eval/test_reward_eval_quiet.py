"""The job's quiet start (``job.quiet``): the known library notices go, everything else stays.

The real libraries are imported in fresh interpreters, with and without the silencing, so a
library that changes its notice fails here (update the known message) instead of flooding
the job's output again unnoticed.
"""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import warnings

import pytest

from reward_eval.job import quiet
from tests.support.server import REPO

NOISE = (
    "Gym has been unmaintained since 2022",
    "No private macro file found!",
    "It is recommended to use a private macro file",
    "To setup, run: python",
    "The 'warn' method is deprecated",
)
KNOWN = "The 'warn' method is deprecated, use 'warning' instead"
IMPORTS = "import rlinf.envs.libero.venv, robosuite, gym"
REAL_MESSAGES = """
import logging, warnings
logging.getLogger("robosuite_logs").warning("a real robosuite warning")
warnings.warn("another deprecation", DeprecationWarning)
raise SystemExit("a real failure")
"""


def _stderr(silence: bool) -> subprocess.CompletedProcess[str]:
    setup = "from reward_eval.job.quiet import silence_known_noise\n"
    setup += "silence_known_noise()\n" if silence else ""
    return subprocess.run(
        [sys.executable, "-c", setup + IMPORTS + "\n" + REAL_MESSAGES],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_known_notices_go_and_real_messages_stay() -> None:
    loud, silent = _stderr(silence=False), _stderr(silence=True)
    assert all(notice in loud.stderr for notice in NOISE), "the libraries still print these notices"
    assert not [notice for notice in NOISE if notice in silent.stderr], silent.stderr
    for result in (loud, silent):
        assert result.returncode == 1
        assert "[robosuite WARNING] a real robosuite warning" in result.stderr
        assert "DeprecationWarning: another deprecation" in result.stderr
        assert result.stderr.rstrip().endswith("a real failure")


def test_log_filter_drops_only_the_known_messages() -> None:
    logger = logging.getLogger("test_reward_eval_quiet")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    logger.addFilter(quiet.KnownMessageFilter(quiet.KNOWN_LOG_MESSAGES["robosuite_logs"]))
    try:
        logger.warning("No private macro file found!")
        logger.warning("To setup, run: python %s/scripts/setup_macros.py", "/x")
        logger.warning("Controller %s failed to converge", "OSC_POSE")
    finally:
        logger.removeHandler(handler)
    assert stream.getvalue() == "Controller OSC_POSE failed to converge\n"


def test_showwarning_hook_drops_only_the_known_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[str] = []
    monkeypatch.setattr(warnings, "showwarning", lambda message, *args: shown.append(str(message)))
    monkeypatch.setattr(logging.getLogger("robosuite_logs"), "filters", [])
    monkeypatch.setattr(logging.getLogger("RLinf"), "filters", [])
    monkeypatch.setattr(quiet, "drop_gym_notice", lambda: False)  # gym's table stays as it is here
    quiet.silence_known_noise()
    quiet.silence_known_noise()  # idempotent: one hook, one filter per logger
    assert len(logging.getLogger("RLinf").filters) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # what RLinf's "once" would let through, and more
        cases = [(KNOWN, DeprecationWarning), (KNOWN, UserWarning), ("real", DeprecationWarning)]
        for message, category in cases:
            warnings.warn(message, category, stacklevel=1)
    assert shown == [KNOWN, "real"], "only the known message in its known category is dropped"


def test_dropping_stdout_lines_passes_every_other_line(capsys: pytest.CaptureFixture[str]) -> None:
    with quiet.dropping_stdout_lines():
        print("[info] using task orders [0, 1, 2]")
        print("first", end="")
        print(" line")
        sys.stdout.write("[info] something else\nno newline at the end")
    assert capsys.readouterr().out == "first line\n[info] something else\nno newline at the end"
