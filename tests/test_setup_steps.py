"""tests/support/setup_steps.py: a test that needs a set-up step running beside it waits for it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.support import setup_steps
from tests.support.setup_steps import STEPS_ENV, wait_for


def test_without_test_sh_it_returns_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(STEPS_ENV, raising=False)
    wait_for("vllm_venv", timeout_s=0.0)


def test_it_waits_until_the_step_has_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(STEPS_ENV, str(tmp_path))
    monkeypatch.setattr(setup_steps, "POLL_S", 0.05)
    said: list[str] = []
    monkeypatch.setattr(setup_steps, "_say", said.append)
    threading.Timer(0.3, lambda: (tmp_path / "classifier.status").write_text("0\n")).start()
    started = time.monotonic()
    wait_for("classifier", timeout_s=30)
    assert time.monotonic() - started >= 0.25
    assert said[0].startswith("[test] waiting for set-up's classifier") and "classifier.log" in said[0]
    assert said[1].startswith("[test] set-up's classifier ended after")


def test_a_failed_step_fails_the_test_with_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STEPS_ENV, str(tmp_path))
    (tmp_path / "vllm_venv.status").write_text("1\n")
    (tmp_path / "vllm_venv.log").write_text("[setup] error: no torch==2.13.0+cpu wheel found\n")
    with pytest.raises(pytest.fail.Exception, match=r"(?s)exit status 1.*no torch==2.13.0\+cpu wheel"):
        wait_for("vllm_venv")


def test_a_step_that_never_ends_fails_at_the_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STEPS_ENV, str(tmp_path))
    monkeypatch.setattr(setup_steps, "POLL_S", 0.01)
    monkeypatch.setattr(setup_steps, "_say", lambda line: None)
    with pytest.raises(pytest.fail.Exception, match="had not ended after 0 s"):
        wait_for("classifier", timeout_s=0.05)
