"""The import structure of the product code: no circle, layers that point one way, small modules.

Every product module (the packages ``vlm_reward``, ``reward_eval``, ``docgen``, ``examples``, the
``rlinf`` overlay, and ``benchmarks/`` and ``scripts/``; not ``tests/``) is parsed with :mod:`ast`,
never imported, so the check takes milliseconds and sees what would only run later. An import
counts wherever it stands: at module level, inside a function (a lazy import still ties two
modules together) or under ``TYPE_CHECKING``. Imports by a string (``importlib.import_module``)
are not followed: they are plug-in points, named in settings.

Each failure names the modules and the ``path:line`` of every import that makes it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Where the product code lives: packages walked whole, and folders whose top-level scripts count.
PACKAGE_ROOTS = ("vlm_reward", "reward_eval", "rlinf", "examples", "docgen")
SCRIPT_DIRS = ("benchmarks", "scripts")
MAX_LINES = 350


@dataclass(frozen=True)
class Import:
    """One import of a product module by another: who, whom, and where it is written."""

    source: str
    target: str
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.source} -> {self.target}"


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def product_modules() -> dict[str, Path]:
    """Every product module by dotted name."""
    files = [p for root in PACKAGE_ROOTS for p in (REPO / root).rglob("*.py")]
    files += [p for folder in SCRIPT_DIRS for p in (REPO / folder).glob("*.py")]
    return {_module_name(p): p for p in sorted(files) if "__pycache__" not in p.parts}


def package_of(module: str) -> str:
    """The package a module belongs to: a package's ``__init__`` is the package itself."""
    path = product_modules()[module]
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


# The rlinf overlay mounts the installed RLinf behind its own few modules: an import of an RLinf
# module the overlay does not shadow (``rlinf.models...``) is of the installed library, a
# third-party dependency like torch, not of the product.
OVERLAY = "rlinf"


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The product module that ``name`` (a dotted module or module attribute) lives in, if any."""
    found = name
    while found and found not in modules:
        found = found.rpartition(".")[0]
    if found == OVERLAY and name != OVERLAY and name.split(".")[1] not in _overlay_children(modules):
        return None
    return found or None


def _overlay_children(modules: dict[str, Path]) -> set[str]:
    return {m.split(".")[1] for m in modules if m.startswith(f"{OVERLAY}.")}


def _targets(node: ast.Import | ast.ImportFrom, module: str, modules: dict[str, Path]) -> set[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            # ``from . import x`` inside a package's __init__ is relative to the package itself.
            anchor = module if modules[module].name == "__init__.py" else module.rpartition(".")[0]
            for _ in range(node.level - 1):
                anchor = anchor.rpartition(".")[0]
            base = f"{anchor}.{base}".strip(".")
        names = [f"{base}.{alias.name}" for alias in node.names]
    found = {_resolve(name, modules) for name in names}
    return {target for target in found if target and target != module}


@cache
def imports() -> tuple[Import, ...]:
    """Every import of one product module by another, in every module of the product."""
    modules = product_modules()
    found: list[Import] = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        rel = str(path.relative_to(REPO))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                found += [
                    Import(module, t, rel, node.lineno) for t in sorted(_targets(node, module, modules))
                ]
    return tuple(found)


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return circles


def _graph(key) -> tuple[dict[str, set[str]], dict[tuple[str, str], list[Import]]]:
    edges: dict[str, set[str]] = defaultdict(set)
    why: dict[tuple[str, str], list[Import]] = defaultdict(list)
    for imp in imports():
        a, b = key(imp.source), key(imp.target)
        if a != b:
            edges[a].add(b)
            edges.setdefault(b, set())
            why[a, b].append(imp)
    return edges, why


def _describe(circle: list[str], edges: dict[str, set[str]], why: dict) -> str:
    members = set(circle)
    lines = [f"circle: {' <-> '.join(circle)}"]
    for a in circle:
        for b in sorted(edges[a] & members):
            lines += [f"  {imp}" for imp in why[a, b]]
    return "\n".join(lines)


@cache
def _packages_holding_packages() -> frozenset[str]:
    modules = product_modules()
    return frozenset(name.rpartition(".")[0] for name, path in modules.items() if path.name == "__init__.py")


def _unit(module: str) -> str:
    """The node a module stands in on the package graph.

    A package that holds no package is one node with all its modules. The own modules of a package
    that does hold packages stand for themselves: they are its ground (``vlm_reward.protocol``) or
    its entry points (``vlm_reward.libero_reward_server``), so a subpackage importing the ground
    while the entry point imports the subpackage is no circle.
    """
    package = package_of(module)
    return module if package in _packages_holding_packages() else package


GRAPHS = {"module": str, "package": _unit}


@pytest.mark.parametrize("level", GRAPHS, ids=GRAPHS)
def test_no_circle(level: str) -> None:
    edges, why = _graph(GRAPHS[level])
    circles = _circles(edges)
    assert not circles, f"{level}s that import each other:\n" + "\n".join(
        _describe(c, edges, why) for c in circles
    )


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


STANDS_ALONE = "the reward server and client need no RLinf, no LIBERO and none of the tools built on them"
# (importer, imported, why the direction matters)
FORBIDDEN = [
    (
        "vlm_reward.backends",
        "vlm_reward.server",
        "a backend is what a server hosts; it cannot know the server",
    ),
    ("vlm_reward", "reward_eval", STANDS_ALONE),
    ("vlm_reward", "examples", STANDS_ALONE),
    ("vlm_reward", "rlinf", STANDS_ALONE),
]


@pytest.mark.parametrize(
    ("importer", "imported", "reason"), FORBIDDEN, ids=[f"{a}->{b}" for a, b, _ in FORBIDDEN]
)
def test_layers_point_one_way(importer: str, imported: str, reason: str) -> None:
    wrong = [str(imp) for imp in imports() if _within(imp.source, importer) and _within(imp.target, imported)]
    assert not wrong, f"{importer} must not import {imported} ({reason}):\n" + "\n".join(wrong)


def test_every_product_module_is_small() -> None:
    sizes = {
        name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in product_modules().items()
    }
    large = {str(product_modules()[name].relative_to(REPO)): n for name, n in sizes.items() if n > MAX_LINES}
    assert not large, f"modules over {MAX_LINES} lines (split them by concept): {large}"


def test_the_graph_sees_the_product() -> None:
    # Guards the checks above against passing on an empty or mis-resolved graph: module imports,
    # a lazy import inside a function and an import of a package's __init__.
    expected = {
        ("reward_eval.__main__", "reward_eval.job.paths"),
        ("reward_eval.finetune.sources", "reward_eval.job.audit_run"),  # inside a function
        ("vlm_reward.server.service", "vlm_reward.backends"),  # the package's __init__
        ("rlinf.envs.libero.libero_env", "vlm_reward.client.scoring"),
    }
    found = {(imp.source, imp.target) for imp in imports()}
    assert expected <= found, sorted(expected - found)
    assert len(product_modules()) > 150


CIRCLES = [
    ("none", {"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ("two", {"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ("three_and_a_tail", {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}, [["a", "b", "c"]]),
    ("two_apart", {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, [["a", "b"], ["c", "d"]]),
]


@pytest.mark.parametrize(("edges", "circles"), [c[1:] for c in CIRCLES], ids=[c[0] for c in CIRCLES])
def test_circles_are_found(edges: dict[str, set[str]], circles: list[list[str]]) -> None:
    assert sorted(_circles(edges)) == circles
