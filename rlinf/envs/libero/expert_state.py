"""The simulator state a scripted policy reads, packed into the ``states`` RLinf hands a policy.

RLinf 0.3's rollout worker gives a policy only ``main_images``, ``wrist_images``,
``extra_view_images``, ``states`` and ``task_descriptions`` (``EnvOutput.prepare_observations``
drops every other key), and no episode boundaries. The project's scripted expert
(``reward_eval/policies``) steers by the objects' poses in robosuite's raw observation and keeps
state across chunks. With ``simulation.expert_state: True`` (:mod:`rlinf.envs.libero.simulation`)
the env packs what it needs into ``states``, one float vector per env with this fixed layout:

====================  =========================================================================
``[0]``               the env's id, unique over the run's env workers and pipeline stages
``[1]``               the episode's elapsed steps (0 in the observation a reset returns)
``[2:5]`` ``[5:9]``   ``robot0_eef_pos``, ``robot0_eef_quat``
``[9 + 8k]``          object slot ``k`` (``MAX_OBJECTS`` slots, objects sorted by name):
                      :func:`name_code` of its name (0: an empty slot), then ``_pos`` (3) and
                      ``_quat`` (4)
====================  =========================================================================

Every value is exact in float32 (a name code has 20 bits), so the vector survives any cast on
its way to the policy. :func:`unpack` gives the policy back a raw-observation dict, naming the
objects it asks for and calling the others ``object<k>``. Pure numpy: no simulator here.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

MAX_OBJECTS = 12  # LIBERO-10's scenes hold at most 8 objects with a pose
HEADER = 2  # env id, elapsed steps
ROBOT = 7  # end-effector position and quaternion
SLOT = 8  # name code, position, quaternion
STATE_DIM = HEADER + ROBOT + MAX_OBJECTS * SLOT
NAME_BITS = 20  # float32 holds integers up to 2**24 exactly


def name_code(name: str) -> int:
    """A stable nonzero 20-bit code of an object's name (its raw-observation prefix, e.g. ``basket_1``)."""
    return (zlib.crc32(name.encode()) & ((1 << NAME_BITS) - 1)) or 1


def object_names(raw_obs: Mapping[str, np.ndarray]) -> list[str]:
    """The objects with a pose in robosuite's raw observation, sorted (the robot excluded)."""
    return sorted(
        key[: -len("_pos")]
        for key in raw_obs
        if key.endswith("_pos") and "_to_" not in key and not key.startswith("robot")
    )


def pack(raw_obs: Mapping[str, np.ndarray], env_id: int, elapsed: int) -> np.ndarray:
    """The ``STATE_DIM`` float64 vector of one env (see the module docstring for the layout)."""
    names = object_names(raw_obs)
    if len(names) > MAX_OBJECTS:
        raise ValueError(f"the scene has {len(names)} objects with a pose; the layout holds {MAX_OBJECTS}.")
    codes = [name_code(name) for name in names]
    if len(set(codes)) != len(codes):
        raise ValueError(f"two objects of the scene share a name code: {names}.")
    state = np.zeros(STATE_DIM)
    state[:HEADER] = (env_id, elapsed)
    state[HEADER : HEADER + ROBOT] = np.concatenate([raw_obs["robot0_eef_pos"], raw_obs["robot0_eef_quat"]])
    for k, (name, code) in enumerate(zip(names, codes, strict=True)):
        start = HEADER + ROBOT + k * SLOT
        state[start] = code
        state[start + 1 : start + SLOT] = np.concatenate([raw_obs[f"{name}_pos"], raw_obs[f"{name}_quat"]])
    return state


@dataclass(frozen=True)
class ExpertView:
    """One env's unpacked state: its id, the episode's elapsed steps and a raw-observation dict."""

    env_id: int
    elapsed: int
    raw_obs: dict[str, np.ndarray]


def unpack(state: np.ndarray, names: Iterable[str]) -> ExpertView:
    """Read one packed vector back; ``names`` are the objects the caller knows by name."""
    state = np.asarray(state, dtype=np.float64)
    if state.shape != (STATE_DIM,):
        raise ValueError(
            f"an expert state is a vector of {STATE_DIM} floats, got shape {state.shape}; "
            "is simulation.expert_state on in the env config?"
        )
    known = {name_code(name): name for name in names}
    raw = {"robot0_eef_pos": state[2:5].copy(), "robot0_eef_quat": state[5:9].copy()}
    for k in range(MAX_OBJECTS):
        start = HEADER + ROBOT + k * SLOT
        code = int(state[start])
        if code == 0:
            continue
        name = known.get(code, f"object{k}")
        raw[f"{name}_pos"] = state[start + 1 : start + 4].copy()
        raw[f"{name}_quat"] = state[start + 4 : start + SLOT].copy()
    return ExpertView(int(state[0]), int(state[1]), raw)
