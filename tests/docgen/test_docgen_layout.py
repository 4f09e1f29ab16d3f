"""docgen.layout: the layout map lists every product package and module, with its docstring's summary."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from docgen.commands import REPO
from docgen.layout import (
    FOLDERS,
    PACKAGES,
    SCRIPT_FOLDERS,
    Entry,
    collect_layout,
    render_layout,
    summary_line,
    unlisted_folders,
)


def _paths(entries: tuple[Entry, ...] | list[Entry], parent: str = "") -> dict[str, str]:
    """Every entry of the tree by its repo path (folders end with ``/``), with its summary."""
    found = {}
    for entry in entries:
        path = parent + entry.name
        found[path] = entry.summary
        found.update(_paths(entry.children, path))
    return found


@pytest.fixture(scope="module")
def listed() -> dict[str, str]:
    return _paths(collect_layout(REPO))


def _product_files() -> list[Path]:
    files = [p for root in PACKAGES for p in (REPO / root).rglob("*.py") if "__pycache__" not in p.parts]
    return sorted(files + [p for folder in SCRIPT_FOLDERS for p in (REPO / folder).glob("*.py")])


def _key(path: Path) -> str:
    """How the map names a file: a package by its folder (``pkg/``), a module by its path."""
    return (
        f"{path.parent.relative_to(REPO).as_posix()}/"
        if path.name == "__init__.py"
        else path.relative_to(REPO).as_posix()
    )


def test_every_product_package_and_module_is_in_the_map(listed: dict[str, str]) -> None:
    expected = {_key(path) for path in _product_files()}
    assert expected - set(listed) == set()
    assert len(expected) > 150  # the walk found the product, not an empty tree


def test_each_summary_is_the_first_line_of_its_docstring(listed: dict[str, str]) -> None:
    for path in _product_files():
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        assert docstring, f"{_key(path)} has no docstring: the map needs its first line"
        assert listed[_key(path)] == summary_line(docstring) != "", _key(path)


def test_every_folder_of_the_packages_is_a_package_or_described() -> None:
    assert unlisted_folders(REPO) == []
    assert all((REPO / folder).is_dir() for folder in FOLDERS), "a described folder that no longer exists"


SUMMARIES = [
    ("plain", "The server.\n\nMore.", "The server"),
    ("literal", "``settings.json``: typed.", "settings.json: typed"),
    ("role_shortened", "A :class:`~.plan.ReplicaPlan` brought up.", "A ReplicaPlan brought up"),
    ("role_whole", "See :mod:`.cli` first", "See cli first"),
    ("none", None, ""),
]


@pytest.mark.parametrize(("docstring", "line"), [s[1:] for s in SUMMARIES], ids=[s[0] for s in SUMMARIES])
def test_summary_line(docstring: str | None, line: str) -> None:
    assert summary_line(docstring) == line


TREE = [
    Entry("pkg/", "The package", (Entry("a_module_with_a_long_name_indeed.py", "Long"), Entry("b.py", ""))),
    Entry("data/", "Files"),
]
RENDERED = """```text
pkg/                             The package
  a_module_with_a_long_name_indeed.py Long
  b.py
data/                            Files
```"""


def test_the_renderer_is_pure_and_aligns_the_summaries() -> None:
    assert render_layout(TREE) == RENDERED
    assert render_layout(TREE) == render_layout(list(TREE))  # same input, same text; nothing read
