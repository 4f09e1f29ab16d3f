"""``scripts/setup.sh`` runs the vLLM venv's install beside the classifier's training.

From empty each takes minutes (pip's downloads and unpacking; the CPU), and neither needs the
other, so ``main`` runs them with ``run_side_by_side`` when the vLLM venv has work
(``vllm_venv_decision``). These tests run it on stand-in steps: both run at once (each waits to
see the other start), every line comes out behind its step's name (a progress bar's
carriage-return redraws too), a failure of either fails set-up with that step's name, exit status
and log after the other has finished, and an interrupt stops both.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.support.server import REPO

SETUP = REPO / "scripts" / "setup.sh"
WAIT_S = 20  # how long a stand-in step waits to see the other one start

# Each stand-in says it started, waits for the other's start (a serial run never sees it: the first
# step fails after WAIT_S), prints a progress bar as tqdm does into a pipe, then exits with
# $FAIL_<name> (0 unless set).
STEPS = """
step() {
  local me="$1" other="$2"
  touch "$DIR/$me.started"
  echo "$me started"
  for ((i = 0; i < WAIT_S * 10; i++)); do [ -e "$DIR/$other.started" ] && break; sleep 0.1; done
  [ -e "$DIR/$other.started" ] || { echo "$me never saw $other start" >&2; exit 7; }
  printf '%s 0%%\\r%s 50%%\\r%s 100%%\\n' "$me" "$me" "$me" >&2
  touch "$DIR/$me.done"
  exit "${FAIL:-0}"
}
setup_vllm_venv() { FAIL="${FAIL_vllm:-0}" step vllm classifier; }
setup_classifier() { FAIL="${FAIL_classifier:-0}" step classifier vllm; }
""".replace("WAIT_S", str(WAIT_S))


def _bash(code: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """Run ``code`` after sourcing setup.sh (which defines its functions and runs nothing) and the
    stand-in steps; its output decoded as is (``text=True`` would turn each ``\\r`` into a newline)."""
    result = subprocess.run(
        ["bash", "-c", f"set -euo pipefail; source {SETUP}\n{STEPS}\n{code}"],
        env={**os.environ, "DIR": str(tmp_path), **env},
        capture_output=True,
        timeout=WAIT_S * 3,
        stdin=subprocess.DEVNULL,
    )
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode(), result.stderr.decode()
    )


def test_both_steps_run_at_once_each_line_behind_its_name(tmp_path: Path) -> None:
    result = _bash("run_side_by_side setup_vllm_venv setup_classifier; echo returned", tmp_path)
    assert (result.returncode, result.stdout) == (0, "returned\n"), result.stderr
    lines = result.stderr.splitlines()
    for name in ("vllm_venv", "classifier"):
        short = name.split("_")[0]
        mine = [line for line in lines if line.startswith(f"[{name}] ")]
        assert mine == [f"[{name}] {short} started", *(f"[{name}] {short} {p}%" for p in (0, 50, 100))]
    assert len(lines) == 8, result.stderr


FAILURES = [("vllm", "setup_vllm_venv"), ("classifier", "setup_classifier")]


@pytest.mark.parametrize(("which", "step"), FAILURES, ids=[f[0] for f in FAILURES])
def test_a_failed_step_fails_set_up_with_its_log_after_the_other_ends(
    tmp_path: Path, which: str, step: str
) -> None:
    code = "run_side_by_side setup_vllm_venv setup_classifier; echo returned"
    result = _bash(code, tmp_path, **{f"FAIL_{which}": "3"})
    assert result.returncode == 1 and "returned" not in result.stdout, result.stderr
    head = f"[setup] error: {step} failed (exit status 3); its output:\n"
    assert result.stderr.count("error:") == 1 and head in result.stderr, result.stderr
    # its log once more, in one piece and as the step wrote it
    assert result.stderr.split(head)[1] == f"{which} started\n{which} 0%\r{which} 50%\r{which} 100%\n"
    assert {p.name for p in tmp_path.glob("*.done")} == {"vllm.done", "classifier.done"}, "the other ended"


def test_an_interrupt_stops_both_steps(tmp_path: Path) -> None:
    """What a terminal's Ctrl-C does: SIGINT to the script's process group (not to the steps',
    which run in their own; without job control they would ignore it)."""
    code = f"source {SETUP}; setup_vllm_venv() {{ sleep 300; }}; setup_classifier() {{ sleep 300; }}; "
    code += "run_side_by_side setup_vllm_venv setup_classifier"
    proc = subprocess.Popen(
        ["bash", "-c", f"set -euo pipefail; {code}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a test runner may ignore it
    )
    try:
        groups = _wait_for_children(proc.pid, count=2)  # each step's subshell leads its group
        assert _group_members(groups), "the steps are running"
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=20) == 130
        deadline = time.monotonic() + 10
        while (left := _group_members(groups)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not left, f"still running: {left}"
    finally:
        proc.kill()


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


def _wait_for_children(pid: int, count: int) -> list[int]:
    deadline = time.monotonic() + 10
    while len(found := _children(pid)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(found) >= count, found
    return found


def _group_members(groups: list[int]) -> list[str]:
    """The live processes (``sleep`` included) in the process groups ``groups``."""
    found = []
    for process in psutil.process_iter(["pid", "name", "status"]):
        with contextlib.suppress(OSError):
            if os.getpgid(process.info["pid"]) in groups and process.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(f"{process.info['pid']} {process.info['name']}")
    return found


# ---- when main() runs them side by side: vllm_venv_decision ----

STAMP_HASH = "vllm_venv_hash"  # the stamp setup.sh writes, computed by the sourced script itself


def _venv(root: Path, stamp: str | None, vllm: bool) -> Path:
    venv = root / "venv-vllm"
    venv.mkdir()
    if stamp is not None:
        (venv / ".setup-stamp").write_text(stamp + "\n")
    if vllm:
        (venv / "lib" / "python3.11" / "site-packages" / "vllm-0.9.dist-info").mkdir(parents=True)
    return venv


# (id, stamp: "current" | "stale" | None, a vllm in it, extra env, decision)
DECISIONS = [
    ("empty", None, False, {}, "install"),
    ("stamp-matches", "current", True, {}, "up-to-date"),
    ("stale-stamp", "stale", True, {}, "install"),
    ("forced", "current", True, {"SETUP_FORCE": "1"}, "install"),
    ("someone-elses-vllm", None, True, {}, "foreign"),
    ("disabled", None, False, {"SETUP_VLLM": "0"}, "disabled"),
]


@pytest.mark.parametrize(
    ("stamp", "vllm", "env", "decision"), [d[1:] for d in DECISIONS], ids=[d[0] for d in DECISIONS]
)
def test_vllm_venv_decision(tmp_path: Path, stamp: str | None, vllm: bool, env: dict, decision: str) -> None:
    venv = _venv(tmp_path, None, vllm)
    code = f"VLLM_VENV={venv}; "
    if stamp is not None:
        code += f"{{ [ {stamp} = current ] && {STAMP_HASH} || echo old; }} > {venv}/.setup-stamp; "
    result = _bash(code + "vllm_venv_decision", tmp_path, **env)
    assert (result.returncode, result.stdout) == (0, decision + "\n"), result.stderr


MAIN = """
install_apt_packages() { echo apt >> "$DIR/calls"; }
setup_main_venv() { echo main_venv >> "$DIR/calls"; }
install_project() { echo project >> "$DIR/calls"; }
vllm_venv_decision() { echo "$DECISION"; }
run_side_by_side() { echo "side_by_side $*" >> "$DIR/calls"; }
setup_vllm_venv() { echo vllm_venv >> "$DIR/calls"; }
setup_classifier() { echo classifier >> "$DIR/calls"; }
main
"""
MAINS = [
    ("install", ["side_by_side setup_vllm_venv setup_classifier"]),
    ("up-to-date", ["vllm_venv", "classifier"]),
    ("disabled", ["vllm_venv", "classifier"]),
]


@pytest.mark.parametrize(("decision", "then"), MAINS, ids=[m[0] for m in MAINS])
def test_main_runs_them_side_by_side_only_when_the_vllm_venv_has_work(
    tmp_path: Path, decision: str, then: list[str]
) -> None:
    """After the main venv and the project (the classifier trains with them), never before."""
    result = _bash(MAIN, tmp_path, DECISION=decision)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "calls").read_text().splitlines() == ["apt", "main_venv", "project", *then]
