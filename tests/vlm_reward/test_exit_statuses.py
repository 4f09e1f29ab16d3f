"""vlm_reward.exit_statuses (and reward_eval.exit_statuses): every status a command exits with is registered.

The registries are what the exit-status page renders, so each command's sources are scanned for
the statuses they exit with: a registry constant they use, a literal they return from an ``int``
function or pass to ``sys.exit``/``SystemExit``/``os._exit``, a script's ``exit N`` and the
statuses it tests (``"$status" -eq N``). Each must be registered for a command that names the
file as a source.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import reward_eval.exit_statuses
import vlm_reward.exit_statuses
from vlm_reward.exit_statuses import EXIT_BAD_OPTIONS, EXIT_OK, CommandExits

REPO = Path(__file__).resolve().parents[2]
REGISTRY: tuple[CommandExits, ...] = (*reward_eval.exit_statuses.REGISTRY, *vlm_reward.exit_statuses.REGISTRY)
REGISTRIES = (vlm_reward.exit_statuses, reward_eval.exit_statuses)
CONSTANTS = {
    name: value for module in REGISTRIES for name, value in vars(module).items() if name.startswith("EXIT_")
}
SOURCES = sorted({source for entry in REGISTRY for source in entry.sources})
_EXITS = ("exit", "_exit", "SystemExit")  # sys.exit, os._exit, raise SystemExit
_SHELL = re.compile(r"\bexit\s+(\d+)\b|\$status\"?\s+-eq\s+(\d+)")


def registered(source: str) -> frozenset[int | str]:
    """The statuses registered for the commands that name ``source``."""
    return frozenset().union(*(entry.codes() for entry in REGISTRY if source in entry.sources))


def python_exits(text: str) -> Iterator[tuple[int, int]]:
    """(line, status) for each status the module exits with (see the module docstring)."""
    tree = ast.parse(text)
    int_functions = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and node.returns is not None
        and ast.unparse(node.returns) == "int"
    ]
    returned = {
        id(n.value) for f in int_functions for n in ast.walk(f) if isinstance(n, ast.Return) and n.value
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in CONSTANTS:
            yield node.lineno, CONSTANTS[node.id]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) in _EXITS
        ):
            yield from _literals(node.args[:1])
        elif id(node) in returned:
            yield from _literals([node])


def _literals(nodes: list[ast.expr]) -> Iterator[tuple[int, int]]:
    for node in nodes:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            yield node.lineno, node.value


def shell_exits(text: str) -> Iterator[tuple[int, int]]:
    """(line, status) for each ``exit N`` and ``"$status" -eq N`` of a script, comments left out."""
    for number, line in enumerate(text.splitlines(), start=1):
        code = line if line.lstrip().startswith("#!") else line.split("#", 1)[0]
        for match in _SHELL.finditer(code):
            yield number, int(match.group(1) or match.group(2))


def exits(source: str) -> list[tuple[int, int]]:
    text = (REPO / source).read_text()
    return list(python_exits(text) if source.endswith(".py") else shell_exits(text))


@pytest.mark.parametrize("source", SOURCES)
def test_every_status_a_source_exits_with_is_registered_for_its_command(source: str) -> None:
    assert (REPO / source).is_file(), f"a registered source that does not exist: {source}"
    unregistered = [
        f"{source}:{line}: {status}" for line, status in exits(source) if status not in registered(source)
    ]
    assert not unregistered, "register them in vlm_reward/exit_statuses.py or reward_eval/exit_statuses.py"


def _entry_id(entry: CommandExits) -> str:
    return f"{entry.command} {entry.mode}".strip()


@pytest.mark.parametrize("entry", REGISTRY, ids=[_entry_id(entry) for entry in REGISTRY])
def test_every_registered_failure_is_one_its_sources_exit_with(entry: CommandExits) -> None:
    """No stale row: each failure status is exited with in the command's sources, but argparse's
    usage error (``parser.error`` exits 2 inside argparse) and a phrase for a status passed on."""
    found = {status for source in entry.sources for _, status in exits(source)}
    expected = {code for code in entry.codes() if isinstance(code, int)} - {EXIT_OK, EXIT_BAD_OPTIONS}
    assert expected <= found, f"registered but never exited with: {sorted(expected - found)}"


def test_the_statuses_are_defined_only_in_the_registries() -> None:
    """A command that wrote its own ``EXIT_... = N`` would bypass the registry and the page."""
    registries = {Path(module.__file__).resolve() for module in REGISTRIES}
    defined = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for top in ("vlm_reward", "reward_eval", "examples", "scripts", "benchmarks")
        for path in sorted((REPO / top).rglob("*.py"))
        if path.resolve() not in registries
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id.startswith("EXIT_") for t in node.targets)
    ]
    assert not defined


def test_a_command_is_registered_once_per_mode() -> None:
    keys = [(entry.command, entry.mode) for entry in REGISTRY]
    assert len(keys) == len(set(keys))
    for entry in REGISTRY:
        codes = [status.code for status in entry.statuses]
        assert len(codes) == len(set(codes)), f"{_entry_id(entry)}: a status registered twice"


def test_every_script_that_exits_with_a_status_of_its_own_is_registered() -> None:
    scripts = sorted(p for top in ("scripts", "examples", "benchmarks") for p in (REPO / top).rglob("*.sh"))
    exiting = {str(p.relative_to(REPO)) for p in scripts if list(shell_exits(p.read_text()))}
    assert exiting and exiting <= set(SOURCES), sorted(exiting - set(SOURCES))
