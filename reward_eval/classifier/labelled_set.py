"""The labelled frame set: LIBERO episodes as MP4s, every kept frame labelled by the simulator.

A set is a directory with ``manifest.json`` and its MP4s (``scripts/make_classifier_data.py``
writes the shipped one, :data:`DEFAULT_DATA_DIR`). Each :class:`LabelledEpisode` has

- ``served``: the episode as the env's client sends it to a judge, ``nframes`` frames evenly
  spaced from the reset frame to the end step (the first success, else the step limit), with
  the simulator's step of each frame;
- ``after`` (successes only): frames of the steps played on past the first success, where the
  goal still holds (or not: the label says) in other arm poses; never part of the episode a
  judge is sent, only more frames to train on;
- per frame of either: ``success`` (LIBERO's ``_check_success()`` at that step) and
  ``goal_fraction`` (the share of the goal's predicates that hold: the simulator's progress).

**The split is the set's, by initial state.** Every episode is ``train``, ``held_out`` or
``test``, and an initial state (task, trial) is on one side only: frames of one scene would
otherwise measure what was memorised. ``held_out`` measures every training run and chose the
defaults; ``test`` (:data:`TEST_FRACTION` of the held-out states, drawn once) was touched by
neither, so its numbers are the untouched ones. The states of the main job's episodes and of the
server's shipped self-test set (:data:`RESERVED_STATES`, :mod:`reward_eval.job.main_job`) are
always held out, so neither is ever trained on.

Pure but for reading and writing the manifest.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from reward_eval.finetune.split import SPLITS
from reward_eval.job.main_job import MAIN_JOB, SELF_TEST

DEFAULT_DATA_DIR = Path(__file__).resolve().parent / "data"
MANIFEST = "manifest.json"
MEASURED = ("held_out", "test")  # the splits never trained on
# The share of the held-out states (the reserved ones excepted) that become the test split.
TEST_FRACTION = 0.5
# (task, trial) of libero_10 never trained on: those scripts/run.sh plays and those of the server's
# shipped self-test set (scripts/make_judge_self_test.py).
RESERVED_STATES = MAIN_JOB.states() | SELF_TEST.states()


@dataclass(frozen=True)
class LabelledFrames:
    """One MP4 of the set and the simulator's verdict on each of its frames, in order."""

    video: str  # file name inside the set's directory
    steps: tuple[int, ...]
    success: tuple[bool, ...]
    goal_fraction: tuple[float, ...]

    def __post_init__(self) -> None:
        sizes = {len(self.steps), len(self.success), len(self.goal_fraction)}
        if len(sizes) != 1 or not self.steps:
            raise ValueError(
                f"{self.video}: steps, success and goal_fraction must be equally long and non-empty, got "
                f"{len(self.steps)}, {len(self.success)} and {len(self.goal_fraction)}."
            )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LabelledFrames:
        return cls(
            str(data["video"]),
            tuple(int(s) for s in data["steps"]),
            tuple(bool(s) for s in data["success"]),
            tuple(float(g) for g in data["goal_fraction"]),
        )


@dataclass(frozen=True)
class LabelledEpisode:
    """One episode of the set (see the module docstring)."""

    task_id: int
    task_text: str
    trial_id: int
    policy: str
    policy_kwargs: Mapping[str, Any]
    seed: int
    native_success: bool
    episode_length: int  # steps to the end step
    split: str
    served: LabelledFrames
    after: LabelledFrames | None = None
    variant: str = ""  # the name of the policy variant that played it (the set's settings list them)

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ValueError(f"episode {self.served.video}: split {self.split!r} is not one of {SPLITS}.")

    @property
    def state(self) -> tuple[int, int]:
        """The initial state, the split's unit: ``(task_id, trial_id)``."""
        return (self.task_id, self.trial_id)

    def frame_sets(self) -> list[LabelledFrames]:
        """The episode's MP4s: the served one, then the after-success one if any."""
        return [self.served] if self.after is None else [self.served, self.after]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["policy_kwargs"] = dict(self.policy_kwargs)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LabelledEpisode:
        after = data.get("after")
        return cls(
            int(data["task_id"]),
            str(data["task_text"]),
            int(data["trial_id"]),
            str(data["policy"]),
            dict(data.get("policy_kwargs") or {}),
            int(data["seed"]),
            bool(data["native_success"]),
            int(data["episode_length"]),
            str(data["split"]),
            LabelledFrames.from_json(data["served"]),
            None if after is None else LabelledFrames.from_json(after),
            str(data.get("variant") or ""),
        )


@dataclass(frozen=True)
class LabelledSet:
    """A set's episodes and how it was made (``settings``: suite, camera, seeds, ...)."""

    root: Path
    episodes: tuple[LabelledEpisode, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)

    def split(self, name: str) -> list[LabelledEpisode]:
        """The episodes of split ``name`` (one of :data:`SPLITS`)."""
        if name not in SPLITS:
            raise ValueError(f"split {name!r} is not one of {', '.join(SPLITS)}.")
        return [e for e in self.episodes if e.split == name]

    def path(self, frames: LabelledFrames) -> Path:
        return self.root / frames.video


def check_split(episodes: Iterable[LabelledEpisode]) -> None:
    """``ValueError`` if an initial state is on both sides, or a reserved one is trained on."""
    sides: dict[tuple[int, int], set[str]] = {}
    for e in episodes:
        sides.setdefault(e.state, set()).add(e.split)
    both = sorted(state for state, found in sides.items() if len(found) > 1)
    if both:
        raise ValueError(f"initial states (task, trial) {both} are in more than one split.")
    trained = sorted(state for state, found in sides.items() if state in RESERVED_STATES and "train" in found)
    if trained:
        raise ValueError(
            f"reserved initial states {trained} (the main job's, the self-test's) are trained on."
        )


def choose_held_out(
    states: Sequence[tuple[int, int]], fraction: float, seed: int
) -> frozenset[tuple[int, int]]:
    """The held-out states: every reserved one, plus ``fraction`` of the others of each task
    (rounded half up, drawn from ``seed``), so every task is measured."""
    import numpy as np

    held = {s for s in states if s in RESERVED_STATES}
    rng = np.random.default_rng(seed)
    for task in sorted({t for t, _ in states}):
        pool = sorted(s for s in states if s[0] == task and s not in RESERVED_STATES)
        count = int(len(pool) * fraction + 0.5)
        held |= {pool[i] for i in rng.permutation(len(pool))[:count]}
    return frozenset(held)


def choose_test(
    held_out: Iterable[tuple[int, int]], fraction: float, seed: int
) -> frozenset[tuple[int, int]]:
    """The test states: ``fraction`` of each task's held-out states that are not reserved (rounded
    down), drawn from ``seed`` on a stream of its own (the held-out draw is unchanged by it)."""
    import numpy as np

    rng = np.random.default_rng([seed, 1])
    test: set[tuple[int, int]] = set()
    for task in sorted({t for t, _ in held_out}):
        pool = sorted(s for s in held_out if s[0] == task and s not in RESERVED_STATES)
        test |= {pool[i] for i in rng.permutation(len(pool))[: int(len(pool) * fraction)]}
    return frozenset(test)


def write_manifest(root: Path, episodes: Sequence[LabelledEpisode], settings: Mapping[str, Any]) -> Path:
    """``root/manifest.json``: the settings the set was made with and every episode."""
    check_split(episodes)
    path = root / MANIFEST
    body = {"settings": dict(settings), "episodes": [e.to_json() for e in episodes]}
    path.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    return path


def load_set(root: str | Path = DEFAULT_DATA_DIR) -> LabelledSet:
    """The set in ``root``; ``ValueError`` in one sentence for a directory that is not one (no or
    unreadable manifest, an episode without its keys, a missing video, a broken split)."""
    root = Path(root)
    try:
        data = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        episodes = tuple(LabelledEpisode.from_json(e) for e in data["episodes"])
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{root} is not a labelled frame set ({type(exc).__name__}: {exc}).") from None
    missing = [f.video for e in episodes for f in e.frame_sets() if not (root / f.video).is_file()]
    if missing:
        raise ValueError(f"labelled frame set {root}: {len(missing)} videos are missing, e.g. {missing[0]}.")
    check_split(episodes)
    return LabelledSet(root, episodes, data.get("settings") or {})
