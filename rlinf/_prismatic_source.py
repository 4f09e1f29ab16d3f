"""Where ``import prismatic`` comes from for RLinf's OpenVLA-OFT path.

RLinf 0.3 builds OpenVLA-OFT from ``prismatic.extern.hf.*``, ``prismatic.vla.constants`` and
``prismatic.training.train_utils``: modules of the openvla-oft git repository, which is not on
PyPI (PyPI's package named ``prismatic`` is an unrelated JSON library). This module decides, once
per process and only when something first imports ``prismatic``:

* **openvla-oft's own package** when an installed ``prismatic`` has ``extern/hf/modeling_prismatic.py``
  (a cluster that followed RLinf's install script): used as it is;
* otherwise **the copy that the PyPI wheel ``vla-arena==1.0.0`` vendors** under
  ``vla_arena.models.openvla_oft.prismatic`` (installed ``--no-deps`` by ``scripts/setup.sh``),
  exposed as ``prismatic``. Its files import each other by their ``vla_arena...`` names, so both
  names map to the *same* module objects. Package ``__init__`` files on the way (``vla_arena``'s,
  ``prismatic``'s, ``prismatic.vla``'s, ...) pull in a robosuite fork, draccus, tensorflow and
  dlimp that the model never uses; they are not run: each package on the path is a bare module
  whose ``__path__`` is its directory, and only the leaf modules run. In such a process
  ``vla_arena`` itself is that bare package (nothing of this project uses the rest of it).

Either way ``prismatic.extern.hf.modeling_prismatic`` is fixed for the installed transformers by
:mod:`rlinf._prismatic_compat` right after it loads. The choice is printed once to stderr (so the
run log says which source was used). With neither installed, ``import prismatic`` raises a
``ModuleNotFoundError`` that gives the install commands.

:func:`install` puts the finder first on ``sys.meta_path``; ``rlinf/__init__.py`` calls it, so every
process that imports rlinf (Ray workers included) has it, with no ``RLINF_EXT_MODULE`` needed.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

ALIAS = "prismatic"
VENDORED = "vla_arena.models.openvla_oft.prismatic"
COMPAT_LEAF = "extern.hf.modeling_prismatic"  # the module rlinf._prismatic_compat fixes
INSTALL_HINT = "pip install timm==0.9.16 && pip install --no-deps vla-arena==1.0.0"


@dataclass(frozen=True)
class PrismaticSource:
    """Which ``prismatic`` a process uses: ``kind`` is ``openvla-oft`` or ``vla-arena``."""

    kind: str
    path: str  # the package directory
    note: str = ""  # why, when the choice was not the obvious one

    def describe(self) -> str:
        what = "openvla-oft's package" if self.kind == "openvla-oft" else "the copy vendored by vla-arena"
        return f"prismatic: {what} at {self.path}{f' ({self.note})' if self.note else ''}"


def _package_dir(name: str, path: list[str] | None = None) -> str | None:
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return locations[0] if locations else None


def locate() -> PrismaticSource:
    """The source to use (see the module docstring); ``ImportError`` with the install command if none."""
    installed = _package_dir(ALIAS)
    if installed and os.path.isfile(os.path.join(installed, *COMPAT_LEAF.split(".")) + ".py"):
        return PrismaticSource("openvla-oft", installed)
    root = _package_dir("vla_arena")
    vendored = os.path.join(root, *VENDORED.split(".")[1:]) if root else None
    if vendored is None or not os.path.isdir(vendored):
        found = f"; the installed `prismatic` at {installed} is another package" if installed else ""
        raise ModuleNotFoundError(  # an ImportError, as for any missing module, with the fix in it
            f"RLinf's OpenVLA-OFT needs openvla-oft's `prismatic`, which is not installed{found}. "
            f"Install the copy vendored on PyPI: `{INSTALL_HINT}` (scripts/setup.sh does this).",
            name=ALIAS,
        )
    note = (
        f"the installed `prismatic` at {installed} is not openvla-oft's, so it is shadowed"
        if installed
        else ""
    )
    return PrismaticSource("vla-arena", vendored, note)


class _BarePackage(importlib.abc.Loader):
    """A package whose ``__init__`` is not run: an empty module with ``__path__`` set by its spec."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        pass


class _SameModule(importlib.abc.Loader):
    """Loads ``prismatic.X`` as the module object already imported as ``vla_arena...prismatic.X``."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        pass


class _CompatLoader(importlib.abc.Loader):
    """Runs the real loader, then applies :mod:`rlinf._prismatic_compat` to the loaded module."""

    def __init__(self, inner: importlib.abc.Loader) -> None:
        self.inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        from rlinf._prismatic_compat import apply

        apply(module)


class PrismaticFinder(importlib.abc.MetaPathFinder):
    """The import hook described in the module docstring; decides the source on first use."""

    def __init__(self) -> None:
        self.source: PrismaticSource | None = None

    def _choose(self) -> PrismaticSource:
        if self.source is None:
            self.source = locate()
            print(f"[rlinf overlay] {self.source.describe()}", file=sys.stderr, flush=True)
        return self.source

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == ALIAS or fullname.startswith(ALIAS + "."):
            source = self._choose()
            if source.kind == "openvla-oft":
                return self._with_compat(fullname, fullname, path)
            return self._alias(fullname)
        if self.source is not None and self.source.kind == "vla-arena" and _within(fullname, VENDORED):
            return self._vendored(fullname, path)
        return None

    def _alias(self, fullname: str) -> importlib.machinery.ModuleSpec:
        target = VENDORED + fullname[len(ALIAS) :]
        is_package = os.path.isdir(self._directory(target))
        spec = importlib.machinery.ModuleSpec(fullname, _SameModule(target), is_package=is_package)
        if is_package:
            spec.submodule_search_locations = [self._directory(target)]
        return spec

    def _vendored(self, fullname: str, path: Sequence[str] | None) -> importlib.machinery.ModuleSpec | None:
        directory = self._directory(fullname)
        if os.path.isdir(directory):  # a package on the way: bare, its __init__ not run
            spec = importlib.machinery.ModuleSpec(fullname, _BarePackage(), is_package=True)
            spec.submodule_search_locations = [directory]
            return spec
        return self._with_compat(fullname, fullname[len(VENDORED) + 1 :], path)

    def _with_compat(
        self, fullname: str, leaf: str, path: Sequence[str] | None
    ) -> importlib.machinery.ModuleSpec | None:
        """The ordinary spec, with the compat fix wrapped around the one module that needs it."""
        if leaf.removeprefix(ALIAS + ".") != COMPAT_LEAF:
            return None  # the ordinary path finder loads it
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _CompatLoader(spec.loader)
        return spec

    def _directory(self, vendored_name: str) -> str:
        """The directory of a ``vla_arena...`` name (which need not exist)."""
        source = self._choose()
        parts = vendored_name.split(".")
        prefix = VENDORED.split(".")
        if len(parts) >= len(prefix):
            return os.path.join(source.path, *parts[len(prefix) :])
        return os.path.normpath(os.path.join(source.path, *([os.pardir] * (len(prefix) - len(parts)))))


def _within(name: str, package: str) -> bool:
    """Whether ``name`` is ``package``, inside it, or one of the packages that lead to it."""
    return name == package or name.startswith(package + ".") or package.startswith(name + ".")


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once per process); cheap: it decides on first use."""
    if not any(isinstance(finder, PrismaticFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, PrismaticFinder())
