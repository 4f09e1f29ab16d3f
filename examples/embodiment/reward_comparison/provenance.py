"""What a run of the learning comparison was made with: its judge's model and the files that train it.

A finished run is reused when the comparison is resumed, which is only right while a new run would
be made the same way: a retrained judge or a changed env, reward term, actor or config makes another
run, and reusing the old one would compare results of code that no longer exists. So each finished
run records its :class:`Provenance` (``finished.json``'s ``"provenance"``): the judge's stamp (a
string naming the model it served, :attr:`judges.Judge.stamp`; ``None`` for the native run or a
judge without one) and a hash per file of :data:`TRAINING_FILES`; :func:`stale_reason` compares it
with now and names what differs, :func:`settings_difference` does the same for the run's settings,
and :func:`reused` decides. Files are read, nothing is run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
_CONFIG = "examples/embodiment/config"
# What decides how a --cpu-learn run trains, relative to the repo (a folder: every file under it).
TRAINING_FILES: tuple[str, ...] = (
    # the run's config and what its defaults list composes
    f"{_CONFIG}/libero_10_grpo_openvlaoft.yaml",
    f"{_CONFIG}/cpu_learn/expert.yaml",
    f"{_CONFIG}/env/libero_10.yaml",
    f"{_CONFIG}/reward_model/default.yaml",
    f"{_CONFIG}/model/openvla_oft.yaml",
    f"{_CONFIG}/training_backend/fsdp.yaml",
    f"{_CONFIG}/weight_syncer/patch_syncer.yaml",
    # the policy and its actor; the env
    "examples/embodiment/cpu_learn",
    "rlinf/envs/libero",
    # the reward path: what the env imports from vlm_reward (client, reward config, watch and guard)
    "vlm_reward/client",
    "vlm_reward/verdict.py",
    "vlm_reward/watch",
    "vlm_reward/frames.py",
    # the training entry, its actor's base and its supervision, the runner and the runs' overrides
    "examples/embodiment/train_embodied_agent.py",
    "examples/embodiment/cpu_smoke",
    "examples/embodiment/guard_stop.py",
    "examples/embodiment/pooled_rates.py",
    "examples/embodiment/scripts/run_embodiment.sh",
    "examples/embodiment/reward_comparison/runs.py",
)
NO_PROVENANCE = "it recorded no provenance (it finished before runs recorded what they were made with)"
LISTED = 6  # changed files named in a message; the rest counted


class NotReusable(Exception):
    """A finished run that cannot stand for a run made now; the message says why and what to do."""


@dataclass(frozen=True)
class Provenance:
    """What one run was made with: its judge's stamp and ``{repo-relative path: sha256}`` of the
    training files."""

    judge_stamp: str | None
    files: Mapping[str, str]

    @property
    def code(self) -> str:
        """One hash over every training file and its path (a quick look in ``finished.json``)."""
        digest = hashlib.sha256()
        for path, file_hash in sorted(self.files.items()):
            digest.update(f"{path}\0{file_hash}\n".encode())
        return digest.hexdigest()

    def to_json(self) -> dict[str, Any]:
        return {"judge_stamp": self.judge_stamp, "code": self.code, "files": dict(self.files)}


def training_files(root: Path | None = None) -> Iterator[Path]:
    """The files of :data:`TRAINING_FILES` under ``root`` (default the repo) that exist, folders
    expanded (bytecode caches left out); a missing one is left out, so that it counts as removed."""
    root = REPO if root is None else root
    for entry in TRAINING_FILES:
        path = root / entry
        if path.is_file():
            yield path
        elif path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def made_with(judge_stamp: str | None, root: Path | None = None) -> Provenance:
    """The provenance of a run made now under ``root`` (default the repo) with a judge of ``judge_stamp``."""
    root = REPO if root is None else root
    files = {p.relative_to(root).as_posix(): _sha256(p) for p in training_files(root)}
    return Provenance(judge_stamp, files)


def reused(path: Path, settings: Mapping[str, Any], now: Provenance, reuse_stale: bool) -> str:
    """The line that says the finished run of ``path`` (its ``finished.json``) is reused: it ran with
    ``settings`` and was made as a run would be ``now``, or ``reuse_stale`` reuses it all the same.
    :class:`NotReusable` otherwise, and always for other settings: another experiment, not a stale
    one (``learning.json`` holds one set of settings for all runs)."""
    finished = json.loads(path.read_text())
    other = settings_difference(finished.get("settings"), settings)
    if other:
        raise NotReusable(f"{path} ran with other settings ({other}); use another --out.")
    stale = stale_reason(finished.get("provenance"), now)
    if stale is None:
        return f"finished before ({path}); not run again."
    if reuse_stale:
        return f"reusing {path} although {stale} (--reuse-stale)."
    advice = f"Delete {path.parent} to run it again, or add --reuse-stale to reuse it as it is."
    raise NotReusable(f"{path} is stale: {stale}. {advice}")


def stale_reason(recorded: Mapping[str, Any] | None, now: Provenance) -> str | None:
    """Why a run that recorded ``recorded`` (its ``"provenance"``; ``None`` for a run that recorded
    none) was not made as a run would be ``now``, naming the judge's stamps or the files that differ;
    ``None`` when it was."""
    if not recorded:
        return NO_PROVENANCE
    reasons = []
    if recorded.get("judge_stamp") != now.judge_stamp:
        before, after = _short(recorded.get("judge_stamp")), _short(now.judge_stamp)
        reasons.append(f"its judge's model differs (stamp {before} then, {after} now)")
    changed = changed_files(recorded.get("files") or {}, now.files)
    if changed:
        reasons.append(f"training files changed: {_listing(changed)}")
    return "; ".join(reasons) or None


def changed_files(before: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    """The paths whose hash differs, sorted; one only ``now`` has is marked ``(new)``, one only
    ``before`` had ``(gone)``."""
    marks = {path: "" for path in before.keys() & now.keys() if before[path] != now[path]}
    marks.update({path: " (new)" for path in now.keys() - before.keys()})
    marks.update({path: " (gone)" for path in before.keys() - now.keys()})
    return [f"{path}{mark}" for path, mark in sorted(marks.items())]


def settings_difference(before: Mapping[str, Any] | None, now: Mapping[str, Any]) -> str | None:
    """The settings (seed, steps, start, overrides) a finished run ran with that differ from ``now``,
    as ``"steps 5 then, 3 now"``; ``None`` when they match."""
    if before is None:
        return "it recorded no settings"
    differ = [key for key in sorted(before.keys() | now.keys()) if before.get(key) != now.get(key)]
    return ", ".join(f"{key} {before.get(key)!r} then, {now.get(key)!r} now" for key in differ) or None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _short(stamp: str | None) -> str:
    return "none" if stamp is None else stamp[:12]


def _listing(paths: list[str]) -> str:
    shown = ", ".join(paths[:LISTED])
    return shown if len(paths) <= LISTED else f"{shown} and {len(paths) - LISTED} more"
