"""How this fork runs LIBERO's physics: the env YAML's ``simulation`` block, every default RLinf's.

RLinf 0.3's ``LiberoEnv`` runs one simulator process per env, renders two 256-px cameras at every
step (~90% of a step's time here: EGL software rendering) and rebuilds each env at every training
reset. That is what a run does unless this block says otherwise; its settings (:data:`KEYS`, the
docs' table is rendered from it) let a run that needs no pictures of every step (a scripted
policy, a judge that sees 16 frames of an episode) fit a small machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

BLOCK = "simulation"
# What each key does (docs/env/simulation.md renders this table with the defaults).
KEYS: dict[str, str] = {
    "cameras": "False: the physics runs without cameras; `main_images` and `wrist_images` are 1x1 "
    "placeholders. With the reward model on, the judge's frames are rendered when an episode ends, from "
    "simulator states recorded at every step: only the `reward_model.nframes` frames the client sends, "
    "chosen as it chooses them, as the agentview camera shows them, upright",
    "judge_frame_size": "the judge's frames' height and width with `cameras: False` "
    "(null: `init_params.camera_heights`)",
    "envs_per_process": "envs sharing one simulator process (RLinf: 1); a process costs ~2 GB before its "
    "first env, so 16 envs fit a 24 GiB machine only a few to a process",
    "rebuild_on_reset": "False: a training reset that keeps an env's task reuses its simulator (RLinf "
    "rebuilds it; its evaluation resets do not) and robosuite resets it without reloading its model "
    "(`hard_reset: False`; the reset then ends micrometres from a rebuilt env's, docs/env/simulation.md); "
    "the trial's initial state is set after either",
    "expert_state": "True: `states` carries the simulator state the scripted policies read "
    "(`rlinf/envs/libero/expert_state.py`) instead of the proprioception",
    "step_ended_episodes": "False: an env whose episode ended in success is not stepped again until its "
    "reset; its last step repeats (observation, success, reward). RLinf steps it on to the end of the "
    "rollout epoch and leaves those steps out of training; needs `ignore_terminations: False`",
    "initial_states": "a list of `[task_id, trial_id]` the training resets draw their groups' initial "
    "states from (null: RLinf's draw over the suite, or `task_id_filter`)",
}


@dataclass(frozen=True)
class SimulationConfig:
    """The validated ``simulation`` block (see the module docstring); defaults are RLinf's env."""

    cameras: bool = True
    judge_frame_size: int | None = None
    envs_per_process: int = 1
    rebuild_on_reset: bool = True
    expert_state: bool = False
    step_ended_episodes: bool = True
    initial_states: tuple[tuple[int, int], ...] | None = None

    def __post_init__(self) -> None:
        for name in ("cameras", "rebuild_on_reset", "expert_state", "step_ended_episodes"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"simulation.{name} must be true or false, got {getattr(self, name)!r}.")
        _check_count("envs_per_process", self.envs_per_process, 1)
        if self.judge_frame_size is not None:
            _check_count("judge_frame_size", self.judge_frame_size, 16)
        if self.initial_states is not None:
            object.__setattr__(self, "initial_states", _pairs(self.initial_states))

    @property
    def is_default(self) -> bool:
        """Whether this is RLinf's env as it is (no setting of this block changes anything)."""
        return self == SimulationConfig()

    @property
    def renders_judge_frames(self) -> bool:
        """Whether the judge's frames come from recorded states (no camera in the physics)."""
        return not self.cameras

    @classmethod
    def from_mapping(cls, block: Mapping[str, Any] | None) -> SimulationConfig:
        """The block of an env config (an OmegaConf node or a dict); None: the defaults."""
        if block is None:
            return cls()
        data = dict(block.items())
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown simulation keys {unknown}; valid: {', '.join(sorted(known))}.")
        if data.get("initial_states") is not None:
            data["initial_states"] = [list(pair) for pair in data["initial_states"]]
        return cls(**data)


def _check_count(name: str, value: Any, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"simulation.{name} must be an integer >= {least}, got {value!r}.")


def _pairs(states: Any) -> tuple[tuple[int, int], ...]:
    """``[[task, trial], ...]`` as a tuple of int pairs; ValueError for anything else or none."""
    try:
        pairs = tuple((task, trial) for task, trial in states)
    except (TypeError, ValueError):
        pairs = ()
    if not pairs or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for p in pairs for v in p):
        raise ValueError(
            f"simulation.initial_states must be a non-empty list of [task_id, trial_id] pairs of "
            f"integers >= 0, got {states!r}."
        )
    return pairs
