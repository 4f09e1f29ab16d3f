"""Where ``import prismatic`` comes from (rlinf/_prismatic_source.py), in fresh interpreters.

What a Ray worker sees is what a new process with the repo root first on ``PYTHONPATH`` sees, so
each case runs in its own interpreter, with fake packages put in front on ``PYTHONPATH`` to stand
for openvla-oft's real ``prismatic`` and for PyPI's unrelated JSON library of the same name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rlinf import _prismatic_source
from rlinf._prismatic_source import VENDORED, PrismaticSource

REPO = Path(__file__).resolve().parents[1]

PROBE = """
import json, sys
import rlinf
from prismatic.extern.hf import modeling_prismatic as alias
import prismatic.vla.constants as constants
out = {
    "file": alias.__file__,
    "compat": getattr(alias, "_rlinf_compat_applied", False),
    "heavy": sorted(m for m in ("tensorflow", "draccus", "dlimp", "robosuite") if m in sys.modules),
}
if "vla_arena" in alias.__name__ or "vla_arena" in sys.modules:
    import vla_arena.models.openvla_oft.prismatic.extern.hf.modeling_prismatic as vendored
    import vla_arena.models.openvla_oft.prismatic.vla as vla_package
    out["same_object"] = vendored is alias and sys.modules["prismatic.vla.constants"] is constants
    out["package_init_ran"] = hasattr(vla_package, "get_vla_dataset_and_collator")
print("PROBE" + json.dumps(out))
"""

FAKE_OFT_MODELING = """
class PrismaticPreTrainedModel:
    @property
    def _supports_sdpa(self):
        return self.language_model._supports_sdpa
"""


def _probe(tmp_path: Path, front: Path | None = None) -> tuple[dict, str]:
    path = os.pathsep.join(str(p) for p in (front, REPO) if p is not None)
    env = {**os.environ, "PYTHONPATH": path}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE"))
    return json.loads(line[len("PROBE") :]), proc.stderr


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return root


def test_vendored_copy_is_prismatic_without_its_heavy_package_inits(tmp_path: Path) -> None:
    out, stderr = _probe(tmp_path)
    assert "/vla_arena/models/openvla_oft/prismatic/extern/hf/modeling_prismatic.py" in out["file"]
    assert out["same_object"], "prismatic.X and vla_arena...prismatic.X must be one module object"
    assert out["package_init_ran"] is False and out["heavy"] == []
    assert out["compat"] is True
    assert "[rlinf overlay] prismatic: the copy vendored by vla-arena at " in stderr


def test_the_json_library_named_prismatic_is_shadowed_not_used(tmp_path: Path) -> None:
    front = _write(tmp_path / "site", {"prismatic/__init__.py": "JSON_LIBRARY = True\n"})
    out, stderr = _probe(tmp_path, front)
    assert "vla_arena" in out["file"] and out["same_object"]
    assert f"the installed `prismatic` at {front / 'prismatic'} is not openvla-oft's, so it is shadowed" in (
        stderr
    )


def test_openvla_ofts_own_package_is_used_and_fixed(tmp_path: Path) -> None:
    files = {
        "prismatic/__init__.py": "",
        "prismatic/extern/__init__.py": "",
        "prismatic/extern/hf/__init__.py": "",
        "prismatic/extern/hf/modeling_prismatic.py": FAKE_OFT_MODELING,
        "prismatic/vla/__init__.py": "",
        "prismatic/vla/constants.py": "STOP_INDEX = 2\n",
    }
    front = _write(tmp_path / "site", files)
    out, stderr = _probe(tmp_path, front)
    assert out["file"] == str(front / "prismatic" / "extern" / "hf" / "modeling_prismatic.py")
    assert out["compat"] is True and "same_object" not in out
    assert f"[rlinf overlay] prismatic: openvla-oft's package at {front / 'prismatic'}" in stderr


@pytest.mark.parametrize(
    ("installed", "vla_arena", "expected"),
    [
        ("oft", "yes", "openvla-oft"),
        ("json", "yes", "vla-arena"),
        (None, "yes", "vla-arena"),
        (None, None, ImportError),
        ("json", None, ImportError),
    ],
    ids=["openvla-oft-wins", "json-library-shadowed", "vendored", "neither", "json-library-only"],
)
def test_locate_prefers_openvla_oft_then_the_vendored_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installed: str | None, vla_arena: str | None, expected
) -> None:
    prismatic = tmp_path / "prismatic"
    if installed == "oft":
        _write(tmp_path, {"prismatic/extern/hf/modeling_prismatic.py": ""})
    elif installed == "json":
        _write(tmp_path, {"prismatic/__init__.py": ""})
    if vla_arena:
        (tmp_path / "vla_arena" / "models" / "openvla_oft" / "prismatic").mkdir(parents=True)
    dirs = {
        "prismatic": prismatic if installed else None,
        "vla_arena": tmp_path / "vla_arena" if vla_arena else None,
    }
    monkeypatch.setattr(
        _prismatic_source, "_package_dir", lambda name, path=None: dirs[name] and str(dirs[name])
    )
    if expected is ImportError:
        with pytest.raises(
            ImportError, match=r"pip install timm==0\.9\.16 && pip install --no-deps vla-arena"
        ):
            _prismatic_source.locate()
        return
    source = _prismatic_source.locate()
    assert source.kind == expected
    want = prismatic if expected == "openvla-oft" else tmp_path / VENDORED.replace(".", "/")
    assert source == PrismaticSource(expected, str(want), source.note)
    assert ("shadowed" in source.note) == (installed == "json")
