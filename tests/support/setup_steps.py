"""Set-up's steps that run beside the tests: a test that needs one waits for it, visibly.

``scripts/test.sh`` sets up ``.venv`` and the project first, then starts the vLLM venv's install
and the classifier's training in the background (``SETUP_PART=vllm_venv`` / ``classifier``) and
names their directory in ``$SETUP_STEPS_DIR``: ``STEP.log`` as it goes, ``STEP.status`` (its exit
status) once it has ended. :func:`wait_for` blocks until that file exists, saying so on the
terminal; a step that failed fails the test with its log's tail. Without ``$SETUP_STEPS_DIR``
(pytest run by hand, after a whole ``scripts/setup.sh``) it returns at once.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

STEPS_ENV = "SETUP_STEPS_DIR"
VLLM_VENV, CLASSIFIER = "vllm_venv", "classifier"
TIMEOUT_S = 1500.0  # from empty the vLLM venv takes 3-5 min and the classifier 3-6 min here
POLL_S = 1.0
# The time limit of a test that may wait (pytest.mark.timeout): the wait, then the test itself.
WAITING_TEST_TIMEOUT_S = TIMEOUT_S + 600


def wait_for(step: str, timeout_s: float = TIMEOUT_S) -> None:
    """Return once set-up's ``step`` has ended well (see the module docstring)."""
    root = os.environ.get(STEPS_ENV)
    if not root:
        return
    status, log = Path(root) / f"{step}.status", Path(root) / f"{step}.log"
    if not status.exists():
        started = time.monotonic()
        _say(f"[test] waiting for set-up's {step} (running beside the tests; its log: {log})")
        while not status.exists():
            if time.monotonic() - started > timeout_s:
                pytest.fail(f"set-up's {step} had not ended after {timeout_s:.0f} s; its log: {log}")
            time.sleep(POLL_S)
        _say(f"[test] set-up's {step} ended after {time.monotonic() - started:.0f} s of waiting")
    code = status.read_text().strip()
    if code != "0":
        tail = log.read_text(errors="replace")[-4000:] if log.exists() else "(no log)"
        pytest.fail(f"set-up's {step} failed (exit status {code}); the end of its log:\n{tail}")


def _say(line: str) -> None:
    """Print past pytest's capture: the wait shows on the terminal while it lasts."""
    print(line, file=sys.__stderr__, flush=True)
