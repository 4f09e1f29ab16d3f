"""``scripts/setup.sh``'s apt step, against stand-in ``dpkg-query``, ``apt-cache`` and ``apt-get``.

The step decides per package: installed (nothing to do), installable (apt has a candidate:
install it, and an install that fails stops set-up with apt's message) or absent (Ubuntu's
chromium: a note, set-up goes on). The stand-in ``apt-cache`` prints its ``Candidate:`` line
first and then far more than a pipe holds, as a real ``apt-cache policy`` of a package with a
long version table can: a probe that stops reading at its first match (``grep -q``) kills it
with SIGPIPE, which under ``pipefail`` read as "absent" on a machine where apt had the package.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from tests.support.server import REPO

SETUP = REPO / "scripts" / "setup.sh"
INSTALLED = ("libegl1", "shellcheck")  # what the stand-in dpkg-query says is installed
CANDIDATES = {"shellcheck": "0.9.0-1", "chromium": "150.0.7871.100-1~deb12u1", "snap-only": "(none)"}
FILLER_LINES = 20_000  # ~1 MB after the Candidate line: many times a pipe's 64 KiB buffer


def _script(path: Path, body: str) -> None:
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


DPKG_QUERY = """
for p in INSTALLED; do
  [ "${@: -1}" = "$p" ] && { echo "install ok installed"; exit 0; }
done
echo "dpkg-query: no packages found matching ${*: -1}" >&2
exit 1
"""
APT_CACHE = """
pkg="${*: -1}"
case "$pkg" in
CASES  *) exit 0 ;;
esac
echo "$pkg:"
echo "  Installed: (none)"
echo "  Candidate: $c"
echo "  Version table:"
for ((i = 0; i < FILLER; i++)); do
  echo "     $c 500 http://deb.debian.org/debian bookworm/main amd64 Packages"
done
"""
APT_GET = """
echo "$*" >> "LOG"
if [[ " $* " == *" install "* ]] && [ -n "${APT_FAIL:-}" ]; then
  echo "E: Unable to fetch some archives" >&2
  exit 100
fi
"""


@pytest.fixture
def apt_bin(tmp_path: Path) -> Path:
    """A directory of stand-in apt tools; ``apt-get`` logs its arguments to ``apt-get.log``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _script(bin_dir / "dpkg-query", DPKG_QUERY.replace("INSTALLED", " ".join(INSTALLED)))
    cases = "".join(f'  {pkg}) c="{cand}" ;;\n' for pkg, cand in CANDIDATES.items())
    _script(bin_dir / "apt-cache", APT_CACHE.replace("CASES", cases).replace("FILLER", str(FILLER_LINES)))
    _script(bin_dir / "apt-get", APT_GET.replace("LOG", str(tmp_path / "apt-get.log")))
    return bin_dir


def _bash(apt_bin: Path, code: str, **env: str) -> subprocess.CompletedProcess:
    """Run ``code`` after sourcing setup.sh (which defines its functions and runs nothing)."""
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail; source {SETUP}; {code}"],
        env={**os.environ, "PATH": f"{apt_bin}:{os.environ['PATH']}", **env},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


DECISIONS = [
    ("installed", "shellcheck", "installed"),
    ("installable", "chromium", "installable"),
    ("no-candidate", "snap-only", "absent"),
    ("unknown-to-apt", "not-a-package", "absent"),
]


@pytest.mark.parametrize(("package", "decision"), [d[1:] for d in DECISIONS], ids=[d[0] for d in DECISIONS])
def test_apt_decision_reads_the_whole_policy(apt_bin: Path, package: str, decision: str) -> None:
    for _ in range(5):  # the old probe lost this race most of the time, not every time
        result = _bash(apt_bin, f"apt_decision {package}")
        assert (result.returncode, result.stdout.strip()) == (0, decision), result.stderr


def test_the_stand_in_is_long_enough_to_break_an_early_exit_probe(apt_bin: Path) -> None:
    """The race the probe avoids is real with this stand-in: ``grep -q`` under pipefail fails."""
    probe = "apt-cache policy chromium | grep -q 'Candidate: [^(]'"
    codes = {_bash(apt_bin, f"{probe} && echo found || echo lost:$?").stdout.strip() for _ in range(5)}
    assert "lost:141" in codes, codes


def test_only_what_is_missing_and_installable_is_installed(apt_bin: Path, tmp_path: Path) -> None:
    code = (
        "APT_PACKAGES=(libegl1 shellcheck chromium snap-only); check_browser() { :; }; install_apt_packages"
    )
    result = _bash(apt_bin, code)
    assert result.returncode == 0, result.stderr
    calls = (tmp_path / "apt-get.log").read_text().splitlines()
    assert calls[-1].endswith("install -y -qq --no-install-recommends chromium"), calls
    assert "apt has no package snap-only; skipped" in result.stderr


def test_a_failed_install_stops_set_up_with_apts_message(apt_bin: Path) -> None:
    code = "APT_PACKAGES=(chromium); check_browser() { :; }; install_apt_packages"
    result = _bash(apt_bin, code, APT_FAIL="1")
    assert result.returncode == 1
    assert "E: Unable to fetch some archives" in result.stderr
    assert "error: apt-get install chromium failed" in result.stderr


def test_nothing_missing_runs_no_apt_at_all(apt_bin: Path, tmp_path: Path) -> None:
    code = "APT_PACKAGES=(libegl1 shellcheck); check_browser() { :; }; install_apt_packages"
    result = _bash(apt_bin, code)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "apt-get.log").exists()


def test_the_apt_step_runs_before_the_venv_stamps_are_looked_at() -> None:
    """A stamp written after a failed first run must not stop a later run from installing."""
    main = SETUP.read_text().split("main() {", 1)[1]
    assert main.index("install_apt_packages") < main.index("setup_main_venv")
    assert (
        "install_apt_packages" not in SETUP.read_text().split("setup_main_venv() {", 1)[1].split("\n}\n")[0]
    )
