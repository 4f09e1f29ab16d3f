"""A closed-loop pick-and-place controller for one LIBERO env, driven by simulator state.

:class:`PickPlaceController` turns robosuite's raw observation of one env (object poses
``<obj>_pos``/``<obj>_quat``, ``robot0_eef_pos``/``robot0_eef_quat``) into the ordinary
7-D LIBERO action: an end-effector delta for robosuite's ``OSC_POSE`` controller and the
gripper (-1 open, +1 closed). It never touches the simulator; it only acts.

Each :class:`PickPlace` step of a plan runs the phases of :class:`Phase`: hover above the
object, descend, close, lift, carry over the container, lower, open, retreat. Targets
come from the object's *measured* pose at every call, so an object nudged on the way is
followed; a grasp whose descent stalled or whose lift left the object behind is retried
from the hover; and :func:`~.grasping.grasp_pose` places the grasp so the hand misses the objects
standing next to the one it picks.

**Chunks.** The evaluation job asks for ``chunk`` actions per observation (8, as
OpenVLA-OFT predicts). The controller closes the loop on the measured pose at each call
and, within a chunk, on a prediction of the end effector: under ``OSC_POSE`` a held
action ``a`` moves the end effector at about ``MAX_SPEED * a`` per step (measured: 12 mm
per step at ``a = 1``), so the prediction integrates that. The next call corrects the
drift. With ``chunk = 1`` it is closed-loop at every step.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reward_eval.policies.grasping import PickPlace, grasp_pose
from reward_eval.policies.rotations import (
    matrix_to_rotvec,
    quat_to_matrix,
    rotvec_to_matrix,
    yaw_rotation,
)

# robosuite's OSC_POSE for LIBERO: an action of 1 asks for 5 cm / 0.5 rad; the arm's
# impedance turns a held action into a speed of about 12 mm (0.12 rad) per 20 Hz step.
MAX_SPEED = 0.0125
MAX_TURN = 0.12
POS_GAIN = 1.0 / 0.06  # full speed beyond 6 cm of error, proportional below
TURN_GAIN = 1.0 / 0.3
XY_INTEGRAL_GAIN = 0.6  # per step, per metre of x-y error
DESCENT_SPEED = 0.6  # of full speed: faster descents drag the arm sideways more
GRIPPER_OPEN, GRIPPER_CLOSED = -1.0, 1.0
GRIPPER_STEPS = 12  # the Panda gripper needs ~10 steps to close or open fully
MAX_GRASP_TRIES = 3
STALL_STEPS = 4  # descending steps between two checks for a stalled descent
PHASE_LIMIT = 120  # steps from hover to grasp before a grasp counts as failed
GRASP_REACH = 0.015  # a descent blocked this close above the grasp height grasps there

# The end effector's orientation after a LIBERO reset: fingers pointing down, closing
# along the world y axis (robosuite quaternion (1, 0, 0, 0), x-y-z-w).
DOWN = np.diag([1.0, -1.0, -1.0])


class Phase(enum.Enum):
    """Where the controller is in one pick-and-place; ``DONE`` once the plan is through."""

    HOVER = "hover"
    DESCEND = "descend"
    CLOSE = "close"
    LIFT = "lift"
    CARRY = "carry"
    LOWER = "lower"
    OPEN = "open"
    RETREAT = "retreat"
    DONE = "done"


@dataclass
class _Belief:
    """What the controller assumes about the robot between two measurements."""

    pos: np.ndarray
    rot: np.ndarray


class PickPlaceController:
    """Runs a plan of :class:`PickPlace` steps on one env; see the module docstring.

    ``act(raw_obs, n)`` returns ``(n, 7)`` float32 actions. ``drop_at`` (a :class:`Phase`,
    for the last step of the plan only) opens the gripper when that phase begins and
    abandons the plan: the noise knob that turns a success into a near miss.
    """

    def __init__(self, plan: Sequence[PickPlace], drop_at: Phase | None = None) -> None:
        if not plan:
            raise ValueError("a pick-and-place plan needs at least one step.")
        self.plan = list(plan)
        self.drop_at = drop_at
        self.step_index = 0
        self.phase = Phase.HOVER
        self.tries = 0
        self._timer = 0
        self._held_yaw = 0.0
        self._grasps: dict[int, tuple[np.ndarray, float]] = {}
        self._descent_from, self._descent_steps = np.inf, 0
        self._xy_bias, self._xy_gap = np.zeros(2), 0.0
        self._phase_steps = 0

    @property
    def current(self) -> PickPlace | None:
        """The plan step being executed; None when done."""
        return None if self.phase is Phase.DONE else self.plan[self.step_index]

    def act(self, raw_obs: Mapping[str, np.ndarray], n: int) -> np.ndarray:
        """The next ``n`` actions, planned from the measured state in ``raw_obs``."""
        belief = _Belief(
            np.array(raw_obs["robot0_eef_pos"], float), quat_to_matrix(raw_obs["robot0_eef_quat"])
        )
        self._grasps = {}  # grasp poses of this observation, per plan step
        self._check_progress(raw_obs)
        self._integrate(raw_obs, belief.pos, n)
        actions = np.zeros((n, 7), dtype=np.float32)
        for i in range(n):
            actions[i] = self._one_action(raw_obs, belief, measured=i == 0)
            belief.pos = belief.pos + MAX_SPEED * actions[i, :3]
            belief.rot = rotvec_to_matrix(MAX_TURN * actions[i, 3:6]) @ belief.rot
        return actions

    def _one_action(self, raw_obs: Mapping[str, np.ndarray], belief: _Belief, measured: bool) -> np.ndarray:
        if self.phase is Phase.DONE:
            return _action(np.zeros(3), np.zeros(3), GRIPPER_OPEN)
        self._phase_steps += 1
        target, yaw, gripper = self._target(raw_obs)
        move = POS_GAIN * (target - belief.pos)
        move[:2] += self._xy_bias
        move = np.clip(move, -1.0, 1.0)
        turn = np.clip(TURN_GAIN * matrix_to_rotvec(yaw_rotation(yaw) @ DOWN @ belief.rot.T), -1.0, 1.0)
        if self.phase is Phase.DESCEND:
            # Going down drags the arm sideways (up to 4 cm near the edge of its reach), so
            # the descent waits while the measured x-y error is above a centimetre.
            move[2] = 0.0 if self._xy_gap > 0.01 else max(move[2], -DESCENT_SPEED)
            self._descent_steps += move[2] < 0.0
        self._advance(np.abs(target - belief.pos), measured)
        return _action(move, turn, gripper)

    def _integrate(self, raw_obs: Mapping[str, np.ndarray], measured: np.ndarray, n: int) -> None:
        """Integral action on the measured x-y error while lining up over an object.

        Contact and joint friction leave the arm up to ~1 cm short of an x-y target under
        the proportional term alone; the integral removes that offset.
        """
        if self.phase not in (Phase.HOVER, Phase.DESCEND):
            return
        error = self._target(raw_obs)[0][:2] - measured[:2]
        self._xy_gap = float(np.abs(error).max())
        self._xy_bias = np.clip(self._xy_bias + XY_INTEGRAL_GAIN * n * error, -0.5, 0.5)

    def _target(self, raw_obs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, float, float]:
        """Where the end effector should be in the current phase, its yaw and the gripper."""
        step = self.current
        obj = np.asarray(raw_obs[f"{step.obj}_pos"], float)
        home = np.asarray(raw_obs[f"{step.container}_pos"], float)
        eef = np.asarray(raw_obs["robot0_eef_pos"], float)
        carry_z = home[2] + step.box.rim + step.grasp.hang + 0.04
        grasp_z = obj[2] + step.grasp.height
        shift, yaw = self._grasp(raw_obs)
        obj = obj + shift
        over_box = np.array([home[0] + step.offset[0], home[1] + step.offset[1], carry_z])
        targets = {
            Phase.HOVER: (np.array([obj[0], obj[1], max(grasp_z + 0.1, carry_z)]), GRIPPER_OPEN),
            Phase.DESCEND: (np.array([obj[0], obj[1], grasp_z]), GRIPPER_OPEN),
            # Closing and lifting hold the x-y where the fingers are: the object moves with
            # them from here on, and a target that follows it would chase itself.
            Phase.CLOSE: (np.array([eef[0], eef[1], grasp_z]), GRIPPER_CLOSED),
            Phase.LIFT: (np.array([eef[0], eef[1], carry_z]), GRIPPER_CLOSED),
            Phase.CARRY: (over_box, GRIPPER_CLOSED),
            Phase.LOWER: (over_box - [0.0, 0.0, 0.07], GRIPPER_CLOSED),
            Phase.OPEN: (over_box - [0.0, 0.0, 0.07], GRIPPER_OPEN),
            Phase.RETREAT: (over_box, GRIPPER_OPEN),
        }
        target, gripper = targets[self.phase]
        return target, (self._held_yaw if self.phase in _HOLDING else yaw), gripper

    def _grasp(self, raw_obs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, float]:
        """:func:`grasp_pose` of the current step, computed once per observation."""
        if self.step_index not in self._grasps:
            self._grasps[self.step_index] = grasp_pose(self.current, raw_obs)
        return self._grasps[self.step_index]

    def _advance(self, error: np.ndarray, measured: bool) -> None:
        """Move to the next phase once this one's target is reached (or its timer ran out).

        Lining up over an object (hover, descend) ends on a measured pose only: the
        prediction within a chunk ignores the arm's lag and overshoot.
        """
        if self.phase in (Phase.CLOSE, Phase.OPEN):
            self._timer += 1
            if self._timer >= GRIPPER_STEPS:
                self._enter(_NEXT[self.phase])
        elif _within(error, _TOLERANCE[self.phase]) and (measured or self.phase not in _PRECISE):
            self._enter(_NEXT[self.phase])

    def _enter(self, phase: Phase) -> None:
        self._timer = 0
        self._descent_from, self._descent_steps = np.inf, 0
        if phase is not Phase.DESCEND:
            self._phase_steps = 0
        self._xy_bias = np.zeros(2)
        if phase is Phase.LIFT:
            self._held_yaw = self._grasps[self.step_index][1]
        if phase is Phase.HOVER and self.phase is Phase.RETREAT:
            self.step_index += 1
            self.tries = 0
            if self.step_index == len(self.plan):
                phase = Phase.DONE
        if self.drop_at is phase and self.step_index == len(self.plan) - 1:
            phase = Phase.DONE  # DONE opens the gripper wherever the arm is
        self.phase = phase

    def _check_progress(self, raw_obs: Mapping[str, np.ndarray]) -> None:
        """Handle a stalled descent or an empty lift, from the measured pose at a chunk start.

        A descent stalls when the fingers land on something (measured height unchanged over
        a chunk in which the arm was told to descend, or no grasp after ``PHASE_LIMIT``
        steps of lining up and descending): within ``GRASP_REACH`` of the grasp
        height they are at the object, so close; higher up, a finger is on the object's rim,
        so retry from the hover. A lift or carry that opens a gap between end effector and
        object holds nothing: retry. After ``MAX_GRASP_TRIES`` the controller carries on regardless.
        """
        step = self.current
        if step is None:
            return
        eef_z, obj_z = float(raw_obs["robot0_eef_pos"][2]), float(raw_obs[f"{step.obj}_pos"][2])
        stalled = self._descent_stalled(eef_z)
        stalled |= self.phase in (Phase.HOVER, Phase.DESCEND) and self._phase_steps > PHASE_LIMIT
        # Checked in every phase that holds the object: a lift can end within a chunk.
        empty_lift = self.phase in _HOLDING and eef_z - obj_z > step.grasp.height + 0.04
        close_enough = eef_z - (obj_z + step.grasp.height) < GRASP_REACH
        if stalled and (close_enough or self.tries + 1 >= MAX_GRASP_TRIES):
            self._enter(Phase.CLOSE)
        elif (stalled or empty_lift) and self.tries + 1 < MAX_GRASP_TRIES:
            self.tries += 1
            self._enter(Phase.HOVER)

    def _descent_stalled(self, eef_z: float) -> bool:
        """Whether the last ``STALL_STEPS`` or more descending steps went down less than 2 mm."""
        if self.phase is not Phase.DESCEND or self._descent_steps < STALL_STEPS:
            return False
        stalled = self._descent_from - eef_z < 0.002
        self._descent_from, self._descent_steps = eef_z, 0
        return stalled


# Metres, (x-y, z). The open fingers leave ~1.5 cm of play around a can or a box's width,
# and the arm settles up to ~1 cm off a target in x-y against contact and joint friction.
_TOLERANCE = {
    Phase.HOVER: (0.01, 0.02),
    Phase.DESCEND: (0.012, 0.006),
    Phase.LIFT: (0.03, 0.02),
    Phase.CARRY: (0.015, 0.02),
    Phase.LOWER: (0.02, 0.02),
    Phase.RETREAT: (0.03, 0.02),
}
_PRECISE = (Phase.HOVER, Phase.DESCEND)
_HOLDING = (Phase.LIFT, Phase.CARRY, Phase.LOWER)
_NEXT = {
    Phase.HOVER: Phase.DESCEND,
    Phase.DESCEND: Phase.CLOSE,
    Phase.CLOSE: Phase.LIFT,
    Phase.LIFT: Phase.CARRY,
    Phase.CARRY: Phase.LOWER,
    Phase.LOWER: Phase.OPEN,
    Phase.OPEN: Phase.RETREAT,
    Phase.RETREAT: Phase.HOVER,
}


def _within(error: np.ndarray, tolerance: tuple[float, float]) -> bool:
    return bool(error[:2].max() <= tolerance[0] and error[2] <= tolerance[1])


def _action(move: np.ndarray, turn: np.ndarray, gripper: float) -> np.ndarray:
    return np.concatenate([move, turn, [gripper]]).astype(np.float32)
