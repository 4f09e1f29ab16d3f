"""The judges of the learning comparison: their models made ready, their servers run for one run.

Each judge is the project's reward server (``vlm_reward.libero_reward_server``) on 127.0.0.1,
started with its run and stopped after it (also when the run fails or is interrupted: a
context manager), its log beside the run's (``DIR/<run>/reward_server.log``). Their models:

- ``classifier``: the checkpoint set-up trains (``reward_eval.classifier.setup_checkpoint``;
  trained here, stamped, if it is missing or stale);
- ``lenient``: the same command trained with ``--target half_goal`` (one object of two in the
  basket counts as a success), stamped the same way, beside it;
- ``progress``: the same with ``--target goal_fraction`` (the share of the goal's predicates
  that hold: a graded progress judge), beside it too;
- ``near_miss``: the success classifier trained on a set whose near misses include objects let go
  beside the basket (``scripts/make_classifier_data.py --variants near_miss``, made once into
  :data:`NEAR_MISS_DATA`, ~30 min here; trained 10 epochs), stamped beside set-up's;
- ``tiny_vlm``: the tiny random-weight Qwen2.5-VL, built offline into ``DIR/judges`` once;
- ``vlm``: the VLM judge trained here on the shipped labelled set (:mod:`reward_eval.trained_judge`),
  shipped with its stamp, served by its recipe's ``BACKEND``.

Each also has a stamp (:attr:`Judge.stamp`), which a finished run records (:mod:`.provenance`) so
that a run judged by another model is not reused: a classifier's is the stamp set-up writes beside
it (its set's manifest, the training code, its options), the tiny VLM's a hash of its built files,
the trained VLM's its recipe's stamp.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reward_eval.classifier import setup_checkpoint
from reward_eval.classifier.labelled_set import DEFAULT_DATA_DIR, MANIFEST
from reward_eval.job.paths import REPO
from reward_eval.trained_judge.recipe import BACKEND as TRAINED_VLM_BACKEND
from vlm_reward.tools.runtime import server_python
from vlm_reward.tools.server_process import RewardServerProcess, backend_args

NEAR_MISS_DATA = setup_checkpoint.CHECKPOINT.parent / "data_near_miss"
DATA_SCRIPT = REPO / "scripts" / "make_classifier_data.py"
DATA_TIMEOUT_S = 3 * 3600  # 31 min here beside a test suite; a hung simulator still ends it
# Its set has fewer success frames to train on than the shipped one (231 against 329): at the
# default 6 epochs its eval-mode loss ended on the class prior (0.72; benchmark 16), at 10 it leaves it.
NEAR_MISS_OPTIONS = ("--epochs", "10")
TINY_VLM = "tiny-qwen2.5-vl"  # in DIR/judges


class JudgeError(RuntimeError):
    """A judge's model could not be made ready; the message says which and why."""


def _shipped_data() -> Path:
    return DEFAULT_DATA_DIR


def _near_miss_dir() -> Path:
    return NEAR_MISS_DATA


def _near_miss_data() -> Path:
    """The labelled set whose near misses include releases beside the basket
    (``make_classifier_data.py --variants near_miss``): made once, beside set-up's checkpoint;
    an interrupted making resumes."""
    if not (NEAR_MISS_DATA / MANIFEST).is_file():
        print(f"[compare] making the labelled set {NEAR_MISS_DATA} (~30 min here, once)", flush=True)
        command = [sys.executable, str(DATA_SCRIPT), "--variants", "near_miss", "--out", str(NEAR_MISS_DATA)]
        status = subprocess.run(command, timeout=DATA_TIMEOUT_S, check=False).returncode
        if status != 0:
            raise JudgeError(f"making the labelled set {NEAR_MISS_DATA} ended with exit status {status}.")
    return NEAR_MISS_DATA


def _classifier(
    options: Sequence[str], checkpoint: Path, data: Callable[[], Path] = _shipped_data
) -> Callable[[Path], Path]:
    def prepare(judges_dir: Path) -> Path:
        status = setup_checkpoint.ensure(checkpoint, options, data())
        if status != 0:
            raise JudgeError(f"training the classifier {checkpoint} ended with exit status {status}.")
        return checkpoint

    return prepare


def _classifier_stamp(options: Sequence[str], data: Callable[[], Path]) -> Callable[[Path], str | None]:
    """The stamp ``setup_checkpoint.ensure`` writes for a classifier trained on ``data()`` (where
    the set is, not made here) with ``options``: what it serves once made ready. ``None`` while
    the set is not made (near_miss's, before its first run)."""

    def stamp(judges_dir: Path) -> str | None:
        if not (data() / MANIFEST).is_file():
            return None
        return setup_checkpoint.stamp(options, data())

    return stamp


def _tiny_vlm(judges_dir: Path) -> Path:
    from vlm_reward.tools.tiny_checkpoint import build_tiny_qwen2_5_vl

    path = judges_dir / TINY_VLM
    if not (path / "config.json").is_file():
        build_tiny_qwen2_5_vl(path)
    return path


def _tiny_vlm_stamp(judges_dir: Path) -> str | None:
    """A hash of the built tiny VLM's ``config.json`` and weights (it is built the same way each
    time, offline); ``None`` while it is not built."""
    path = judges_dir / TINY_VLM
    if not (path / "config.json").is_file():
        return None
    digest = hashlib.sha256()
    for file in (path / "config.json", *sorted(path.glob("*.safetensors")), *sorted(path.glob("*.bin"))):
        digest.update(f"{file.name}\0".encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


def _trained_vlm(judges_dir: Path) -> Path:
    """The shipped trained judge; :class:`JudgeError` when it is not its recipe's (a stale judge
    would be compared under a name that no longer describes it)."""
    from reward_eval.trained_judge import recipe

    if recipe.shipped_stamp() != recipe.stamp():
        raise JudgeError(
            f"the trained VLM judge {recipe.CHECKPOINT} is not its recipe's; remake it with "
            "`python -m reward_eval.trained_judge.recipe make`."
        )
    return recipe.CHECKPOINT


def _trained_vlm_stamp(judges_dir: Path) -> str | None:
    from reward_eval.trained_judge import recipe

    return recipe.shipped_stamp()


def _no_kwargs(judges_dir: Path) -> Mapping[str, Any]:
    return {}


def _no_stamp(judges_dir: Path) -> str | None:
    return None


@dataclass(frozen=True)
class Judge:
    """A judge: the server's backend, how its model is made ready (``judges_dir`` -> model), the
    server's ``--backend-kwargs`` (``judges_dir`` -> kwargs), its ``--plugin`` modules and its
    stamp (``judges_dir`` -> a string that names the model it serves, or ``None``: unknown, which
    a run reused on resume must have recorded too; a cheap call that makes nothing)."""

    backend: str
    prepare: Callable[[Path], Path]
    backend_kwargs: Callable[[Path], Mapping[str, Any]] = _no_kwargs
    plugins: tuple[str, ...] = field(default_factory=tuple)
    stamp: Callable[[Path], str | None] = _no_stamp


def _beside(target: str) -> Path:
    """Where the classifier trained with ``--target TARGET`` lives: beside set-up's."""
    return setup_checkpoint.CHECKPOINT.with_name(f"{setup_checkpoint.CHECKPOINT.name}_{target}")


def _resnet(
    options: Sequence[str],
    checkpoint: Path,
    make: Callable[[], Path] = _shipped_data,
    where: Callable[[], Path] = _shipped_data,
) -> Judge:
    """A classifier judge trained with ``options`` into ``checkpoint`` on the set ``make()`` makes
    ready (``where()``: where that set is, for its stamp)."""
    return Judge("resnet", _classifier(options, checkpoint, make), stamp=_classifier_stamp(options, where))


JUDGES: dict[str, Judge] = {
    "classifier": _resnet((), setup_checkpoint.CHECKPOINT),
    "lenient": _resnet(("--target", "half_goal"), _beside("half_goal")),
    "progress": _resnet(("--target", "goal_fraction"), _beside("goal_fraction")),
    "near_miss": _resnet(NEAR_MISS_OPTIONS, _beside("near_miss"), _near_miss_data, _near_miss_dir),
    "tiny_vlm": Judge("qwen_vl_hf", _tiny_vlm, stamp=_tiny_vlm_stamp),
    "vlm": Judge(TRAINED_VLM_BACKEND, _trained_vlm, stamp=_trained_vlm_stamp),
}


def register_judge(name: str, judge: Judge) -> Judge:
    """Add a judge (a ``--plugin`` module's); ValueError for a name already taken."""
    if name in JUDGES and JUDGES[name] is not judge:
        raise ValueError(f"judge name {name!r} is already registered.")
    JUDGES[name] = judge
    return judge


@contextmanager
def serving(name: str, judges_dir: Path, log_path: Path) -> Iterator[RewardServerProcess]:
    """Judge ``name``'s server, started (its endpoint known, its model maybe still loading), for
    the duration of the ``with``; stopped after it. The caller waits for it (``wait_ready``) while
    it does something else: the comparison launches the run first."""
    judge = JUDGES[name]
    model = judge.prepare(judges_dir)
    videos = judges_dir / "videos"
    videos.mkdir(parents=True, exist_ok=True)
    args = backend_args(judge.backend, str(model), videos, judge.backend_kwargs(judges_dir))
    # A vLLM backend runs on the vLLM venv's interpreter, the others on this one.
    server = RewardServerProcess(args, log_path, python=server_python(judge.backend), plugins=judge.plugins)
    try:
        yield server
    finally:
        server.stop()
