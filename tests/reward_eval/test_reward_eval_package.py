"""The evaluation app as a package: its console script, ``python -m reward_eval``, and the rlinf
overlay it puts first on the path when started as ``reward-eval`` (no ``PYTHONPATH``).

``scripts/setup.sh`` installs the console script (editable, ``--no-deps``); these tests do not
need it installed: they check the ``[project.scripts]`` target and run the same entry point in
a fresh interpreter, with the repo only at the end of ``sys.path`` as the editable finder
leaves it.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import subprocess
import sys

import pytest
import tomllib

from tests.reward_eval.conftest import run_reward_eval
from tests.support.server import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
SCRIPT = "reward-eval"


def test_the_console_script_target_exists_and_is_callable() -> None:
    module, _, name = PYPROJECT["project"]["scripts"][SCRIPT].partition(":")
    assert callable(getattr(importlib.import_module(module), name))


def test_the_distribution_holds_the_app_and_never_the_rlinf_overlay() -> None:
    from setuptools import find_packages

    include = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = set(find_packages(where=str(REPO), include=include))
    assert {"reward_eval", "reward_eval.commands", "reward_eval.job", "reward_eval.judge"} <= packages
    assert not [p for p in packages if p.split(".")[0] == "rlinf"], packages


def test_an_installed_console_script_points_at_the_same_entry() -> None:
    scripts = [e for e in importlib.metadata.entry_points(group="console_scripts") if e.name == SCRIPT]
    if not scripts:
        pytest.skip("reward-eval is not installed here (scripts/setup.sh installs it)")
    assert scripts[0].value == PYPROJECT["project"]["scripts"][SCRIPT]


def test_python_m_reward_eval_lists_the_commands_from_any_directory() -> None:
    result = run_reward_eval("--help", timeout=120)
    assert result.returncode == 0, result.stderr
    assert "run,rescore,report,audit,compare" in result.stdout


def test_the_entry_point_puts_the_repo_first_so_rlinf_is_the_overlay() -> None:
    code = (
        "import sys; sys.path.append(sys.argv[1]); sys.argv[1:] = ['--help']\n"
        "from reward_eval.__main__ import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
        "import os, rlinf; print(rlinf.__file__); print(os.environ['PYTHONPATH'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-c", code, str(REPO)], cwd="/", env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    overlay, path = result.stdout.splitlines()[-2:]
    assert overlay == str(REPO / "rlinf" / "__init__.py")
    assert path.split(os.pathsep)[0] == str(REPO)
