"""Mount this repo's ``rlinf/`` on top of the installed rlinf==0.3.0 without modifying it.

With the repo root first on ``PYTHONPATH``, ``import rlinf`` finds this directory. Each
overlay package's ``__init__`` calls :func:`mount_installed`, which

1. appends the installed package's directory to ``__path__`` (after ours), so a module
   this fork does not ship, e.g. ``rlinf.envs.libero.utils``, is imported from
   site-packages unchanged, while one it does ship, ``rlinf.envs.libero.libero_env``,
   is ours; and
2. runs the installed ``__init__.py`` in the overlay package's namespace, so public names
   defined there (``rlinf.envs.get_env_cls``, ...) exist exactly as upstream defines them.

:func:`load_installed_module` loads the installed version of a module we shadow under
another name, so our module can subclass the original class instead of copying it.

Only three ``__init__`` files and the shadowed modules exist in the overlay; everything
else must come from the installed wheel. ``tests/test_overlay.py`` checks that.
"""

from __future__ import annotations

import importlib.util
import os
import pkgutil
import sys
from types import ModuleType
from typing import Any


def _installed_dir(package: str, overlay_dir: str) -> str:
    """The installed package directory for ``package`` (the first one on sys.path that is not ours)."""
    ours = os.path.realpath(overlay_dir)
    for candidate in pkgutil.extend_path([overlay_dir], package):
        if os.path.realpath(candidate) != ours and os.path.isfile(os.path.join(candidate, "__init__.py")):
            return candidate
    raise ImportError(
        f"the rlinf overlay needs the installed package {package!r} (rlinf==0.3.0) on sys.path; "
        "run scripts/setup.sh or `pip install rlinf==0.3.0`."
    )


def mount_installed(namespace: dict[str, Any]) -> None:
    """Extend the calling overlay package with the installed package of the same name.

    Call it as ``mount_installed(globals())`` from the overlay ``__init__.py``.
    """
    package, overlay_dir = namespace["__name__"], namespace["__path__"][0]
    installed = _installed_dir(package, overlay_dir)
    namespace["__path__"] = [overlay_dir, installed]
    init_file = os.path.join(installed, "__init__.py")
    with open(init_file, encoding="utf-8") as handle:
        code = compile(handle.read(), init_file, "exec")
    exec(code, namespace)


def load_installed_module(name: str) -> ModuleType:
    """Import the installed version of the overlay module ``name`` as ``<package>._installed_<leaf>``.

    The alias lives in the same package, so the original module's relative imports work.
    Loaded once; later calls return the cached module.
    """
    package, _, leaf = name.rpartition(".")
    alias = f"{package}._installed_{leaf}"
    if alias in sys.modules:
        return sys.modules[alias]
    parent = sys.modules[package]
    path = os.path.join(_installed_dir(package, parent.__path__[0]), f"{leaf}.py")
    spec = importlib.util.spec_from_file_location(alias, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the installed module {name!r} from {path}.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[alias] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[alias]
        raise
    return module
