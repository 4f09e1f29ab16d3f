"""The repository's layout map, from the code: each package and module with its docstring's first line.

:func:`render_layout` is pure: a tree of :class:`Entry` (path, one-line summary) in, a Markdown code
block out. :func:`collect_layout` builds the tree from the repository: every Python package and
module of the product (the summary is the first line of its docstring; a package's is its
``__init__.py``'s), and the few folders that hold no Python, whose summaries are written in
:data:`FOLDERS` here. So a new module shows up in the map with its own summary, and a new folder
without one fails the docs' tests until it is described.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

# The top level of the map, in its order: the product's Python packages, then the folders around them.
TOP = ("vlm_reward", "rlinf", "reward_eval", "examples", "docgen", "benchmarks", "scripts", "requirements")
TOP += ("tests", "docs")
# Python packages: every module and package under them is listed.
PACKAGES = ("vlm_reward", "rlinf", "reward_eval", "examples", "docgen")
# Folders of top-level Python scripts (not packages): their modules are listed too.
SCRIPT_FOLDERS = ("benchmarks", "scripts")
# Folders that hold no package of their own, described here; ``{files}`` lists what is in them.
FOLDERS = {
    "vlm_reward/self_test_data": "The self-test's labelled episodes: MP4s and manifest.json "
    "(scripts/make_judge_self_test.py makes them)",
    "reward_eval/classifier/data": "The shipped labelled frame set: episode MP4s and manifest.json "
    "(scripts/make_classifier_data.py makes them)",
    "reward_eval/trained_judge/data": "The trained judge's own labelled set, from sampled initial states: "
    "MP4s and manifest.json (scripts/make_classifier_data.py --sampled --train-only makes them)",
    "reward_eval/trained_judge/trained-qwen2.5-vl": "The shipped VLM judge trained here: weights, "
    "processor, finetune.json and its recipe's stamp (python -m reward_eval.trained_judge.recipe make)",
    "examples/embodiment/config": "Hydra configs of training: {files}",
    "examples/embodiment/config/env": "The env groups, one per LIBERO suite: {files}",
    "examples/embodiment/scripts": "The shell entry points of training and of the judge: {files}",
    "benchmarks": "Costs of the reward path and load/fault runs; results in its README.md",
    "scripts": "The repo's commands: {files}",
    "requirements": "The pinned versions seen working together: {files}",
    "tests": "pytest; mirrors the code (markers in pyproject.toml)",
    "docs": "This site's pages (mkdocs.yml configures it; bash scripts/docs.sh builds it)",
}
NAME_COLUMN = 33  # where the summaries start, as in the hand-written map this replaces


@dataclass(frozen=True)
class Entry:
    """One line of the map: a folder (``name/``) or a module, its summary, and what is inside it."""

    name: str
    summary: str
    children: tuple[Entry, ...] = ()


def render_layout(entries: Sequence[Entry]) -> str:
    """The map as a Markdown code block: one line per entry, indented two spaces per level.

    A name too long for :data:`NAME_COLUMN` puts its summary two spaces after it.
    """
    lines: list[str] = []

    def walk(items: Sequence[Entry], depth: int) -> None:
        for entry in items:
            name = "  " * depth + entry.name
            lines.append(f"{name.ljust(NAME_COLUMN - 1)} {entry.summary}".rstrip() if entry.summary else name)
            walk(entry.children, depth + 1)

    walk(entries, 0)
    return "```text\n" + "\n".join(lines) + "\n```"


def summary_line(docstring: str | None) -> str:
    """A docstring's first line as plain text: RST roles and literals unwrapped, no final period."""
    line = (docstring or "").strip().split("\n", 1)[0].strip()
    line = re.sub(r":[a-z]+:`(~?)\.*([^`]+)`", lambda m: m[2].rsplit(".", 1)[-1] if m[1] else m[2], line)
    return line.replace("``", "").rstrip(".")


def _docstring(path: Path) -> str | None:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))


def _folder_summary(repo: Path, rel: str) -> str:
    folder = repo / rel
    files = sorted(
        f"{p.name}/" if p.is_dir() else p.name
        for p in folder.iterdir()
        if p.suffix != ".py" and p.name != "__pycache__" and not p.name.startswith(".")
    )
    return FOLDERS[rel].format(files=" ".join(files))


def _python_children(repo: Path, folder: Path) -> Iterable[Entry]:
    for path in sorted(folder.glob("*.py")):
        if path.name != "__init__.py":
            yield Entry(path.name, summary_line(_docstring(path)))


def _folder(repo: Path, folder: Path) -> Entry:
    rel = folder.relative_to(repo).as_posix()
    init = folder / "__init__.py"
    if init.exists():
        summary = summary_line(_docstring(init))
    elif rel in FOLDERS:
        summary = _folder_summary(repo, rel)
    else:
        raise ValueError(f"{rel}/ holds no __init__.py and has no summary in docgen.layout.FOLDERS; add one.")
    children = [*_python_children(repo, folder)] if init.exists() or rel in SCRIPT_FOLDERS else []
    subfolders = sorted(p for p in folder.iterdir() if p.is_dir() and _is_listed(repo, p))
    children += [_folder(repo, sub) for sub in subfolders]
    return Entry(f"{folder.name}/", summary, tuple(children))


def _is_listed(repo: Path, folder: Path) -> bool:
    """A package of the product, or a folder described in :data:`FOLDERS`."""
    rel = folder.relative_to(repo).as_posix()
    return rel in FOLDERS or (rel.split("/")[0] in PACKAGES and (folder / "__init__.py").exists())


def _described_within(rel: str) -> bool:
    # A folder inside a described one is part of its ``{files}``: config/model/ is config's.
    return any(rel.startswith(f"{folder}/") for folder in FOLDERS)


def unlisted_folders(repo: Path) -> list[str]:
    """Folders of the product's packages that are neither a package nor described in :data:`FOLDERS`."""
    found = []
    for root in PACKAGES:
        for folder in sorted((repo / root).rglob("*")):
            rel = folder.relative_to(repo).as_posix()
            listed = _is_listed(repo, folder) or _described_within(rel)
            if folder.is_dir() and folder.name != "__pycache__" and not listed:
                found.append(rel)
    return found


def collect_layout(repo: Path) -> list[Entry]:
    """The map's tree for the repository at ``repo`` (see the module docstring)."""
    missing = unlisted_folders(repo)
    if missing:
        raise ValueError(f"folders with no summary in docgen.layout.FOLDERS: {', '.join(missing)}.")
    return [_folder(repo, repo / name) for name in TOP]
