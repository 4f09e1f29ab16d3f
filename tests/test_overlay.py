"""The rlinf overlay: our LiberoEnv in front, everything else straight from the installed wheel.

Each check runs in a fresh interpreter, because the point is what a new process (a Ray
worker, a spawned LIBERO env process) sees when the repo root is first on PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("rlinf", "rlinf.envs", "rlinf.envs.libero")
UPSTREAM_MODULES = (
    "rlinf.envs.libero.utils",
    "rlinf.workers.env.env_worker",
    "rlinf.config",
    "rlinf.envs.venv",
)

PROBE = """
import importlib, json, sys
packages, modules = sys.argv[1].split(","), sys.argv[2].split(",")
out = {"public": {}, "files": {}}
for name in packages:
    module = importlib.import_module(name)
    out["public"][name] = sorted(n for n in vars(module) if not n.startswith("_"))
for name in modules:
    out["files"][name] = importlib.import_module(name).__file__
if sys.argv[3] == "overlay":
    from rlinf.envs import get_env_cls
    cls = get_env_cls("libero")
    out["env_cls"] = f"{cls.__module__}.{cls.__qualname__}"
    out["env_file"] = sys.modules[cls.__module__].__file__
    base = next(c for c in cls.__mro__[1:] if c.__name__ == "LiberoEnv")  # past the fork's mixins
    out["base_file"] = sys.modules[base.__module__].__file__
print("PROBE" + json.dumps(out))
"""


def _probe(with_overlay: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if with_overlay:
        env["PYTHONPATH"] = str(REPO)
    args = [",".join(PACKAGES), ",".join(UPSTREAM_MODULES), "overlay" if with_overlay else "plain"]
    # cwd outside the repo: without the overlay, nothing may pick up ./rlinf by accident.
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], env=env, cwd="/", capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE"))
    return json.loads(line[len("PROBE") :])


@pytest.fixture(scope="module")
def overlay() -> dict:
    return _probe(with_overlay=True)


@pytest.fixture(scope="module")
def plain() -> dict:
    return _probe(with_overlay=False)


def test_get_env_cls_returns_the_project_class(overlay: dict) -> None:
    assert overlay["env_cls"] == "rlinf.envs.libero.libero_env.LiberoEnv"
    assert Path(overlay["env_file"]) == REPO / "rlinf" / "envs" / "libero" / "libero_env.py"


def test_project_class_subclasses_the_installed_one(overlay: dict) -> None:
    assert "site-packages" in overlay["base_file"]
    assert overlay["base_file"].endswith("rlinf/envs/libero/libero_env.py")


@pytest.mark.parametrize("module", UPSTREAM_MODULES, ids=UPSTREAM_MODULES)
def test_other_modules_come_from_site_packages(overlay: dict, plain: dict, module: str) -> None:
    assert "site-packages" in overlay["files"][module]
    assert overlay["files"][module] == plain["files"][module]


@pytest.mark.parametrize("package", PACKAGES, ids=PACKAGES)
def test_installed_public_names_survive(overlay: dict, plain: dict, package: str) -> None:
    missing = set(plain["public"][package]) - set(overlay["public"][package])
    assert not missing, f"{package} lost public names of the installed __init__: {sorted(missing)}"


def test_get_env_cls_is_the_installed_function(overlay: dict) -> None:
    assert "get_env_cls" in overlay["public"]["rlinf.envs"]
    assert "SupportedEnvType" in overlay["public"]["rlinf.envs"]


FORK_FILES = {
    "rlinf/__init__.py",
    "rlinf/_overlay.py",
    "rlinf/_prismatic_source.py",
    "rlinf/_prismatic_compat.py",
    "rlinf/envs/__init__.py",
    "rlinf/envs/libero/__init__.py",
    "rlinf/envs/libero/libero_env.py",
    "rlinf/envs/libero/episode_log.py",
    "rlinf/envs/libero/episode_reward.py",
    "rlinf/envs/libero/reward_term.py",
    "rlinf/envs/libero/expert_state.py",
    "rlinf/envs/libero/process_group.py",
    "rlinf/envs/libero/env_process.py",
    "rlinf/envs/libero/simulation.py",
    "rlinf/envs/libero/simulation_env.py",
}


def test_overlay_ships_only_fork_files() -> None:
    shipped = {str(p.relative_to(REPO)) for p in (REPO / "rlinf").rglob("*.py")}
    assert shipped <= FORK_FILES, f"unexpected files in the overlay: {sorted(shipped - FORK_FILES)}"


def test_pyproject_never_installs_rlinf() -> None:
    import tomllib
    from setuptools import find_packages

    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = find_packages(where=str(REPO), include=include)
    assert "vlm_reward" in packages
    assert not [p for p in packages if p.split(".")[0] == "rlinf"], packages
