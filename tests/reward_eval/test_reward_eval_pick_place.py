"""The pick-and-place controller against a kinematic arm, and its grasp geometry.

``PointArm`` is a narrow stand-in for LIBERO (the real simulator runs in
``test_reward_eval_expert_libero.py``): the end effector moves by exactly the speed the
controller predicts, a closed gripper over an object carries it, and an opened one drops
it straight down. It checks the phase logic, the retries and the drop, in milliseconds.
"""

from __future__ import annotations

import numpy as np
import pytest

from reward_eval.policies import grasping, pick_place
from reward_eval.policies.grasping import grasp_yaw
from reward_eval.policies.libero_plans import CAN, PLANS, plan_for
from reward_eval.policies.pick_place import (
    MAX_SPEED,
    MAX_TURN,
    Phase,
    PickPlaceController,
)
from reward_eval.policies.rotations import matrix_to_rotvec, rotvec_to_matrix

TABLE_Z = 0.44
BASKET = np.array([0.0, 0.27, 0.432])
TASK0 = "put both the alphabet soup and the tomato sauce in the basket"


class PointArm:
    """Kinematic arm and objects.

    ``grip`` False makes every grasp slip (a failed grasp); the end effector cannot go below
    ``floor`` (something under the fingers: a rim, or the object itself).
    """

    def __init__(
        self, objects: dict[str, tuple[float, float]], grip: bool = True, floor: float = 0.0
    ) -> None:
        self.floor = floor
        self.eef = np.array([-0.04, 0.0, 0.70])
        self.rot = pick_place.DOWN.copy()
        self.objects = {name: np.array([x, y, TABLE_Z + 0.035]) for name, (x, y) in objects.items()}
        self.held: str | None = None
        self.grip = grip

    def obs(self) -> dict[str, np.ndarray]:
        # The arm's orientation is a small turn away from DOWN, a half turn about x whose
        # quaternion is (1, 0, 0, 0): turn * down = (w, z, -y, -x) for turn = (x, y, z, w).
        turn = matrix_to_rotvec(self.rot @ pick_place.DOWN.T)
        angle = np.linalg.norm(turn)
        x, y, z = turn / angle * np.sin(angle / 2) if angle > 0 else np.zeros(3)
        quat = np.array([np.cos(angle / 2), z, -y, -x])
        obs = {"robot0_eef_pos": self.eef.copy(), "robot0_eef_quat": quat, "basket_1_pos": BASKET.copy()}
        for name, pos in self.objects.items():
            obs[f"{name}_pos"] = pos.copy()
            obs[f"{name}_quat"] = np.array([0.0, 0.707, 0.707, 0.0])
        return obs

    def step(self, action: np.ndarray) -> None:
        self.eef = self.eef + MAX_SPEED * action[:3]
        self.eef[2] = max(self.eef[2], self.floor)
        self.rot = rotvec_to_matrix(MAX_TURN * action[3:6]) @ self.rot
        if action[6] > 0 and self.held is None and self.grip:
            near = [n for n, p in self.objects.items() if np.abs(p - self.eef).max() < 0.03]
            self.held = near[0] if near else None
        if action[6] < 0 and self.held is not None:
            self.objects[self.held][2] = TABLE_Z + 0.035
            self.held = None
        if self.held is not None:
            self.objects[self.held] = self.eef - [0.0, 0.0, 0.012]

    def in_basket(self, name: str) -> bool:
        return bool(np.abs(self.objects[name][:2] - BASKET[:2]).max() < 0.06)


def run(controller: PickPlaceController, arm: PointArm, chunk: int, steps: int = 600) -> int:
    """Steps until the controller is done (or ``steps``)."""
    for t in range(0, steps, chunk):
        if controller.phase is Phase.DONE:
            return t
        for action in controller.act(arm.obs(), chunk):
            arm.step(action)
    return steps


OBJECTS = {"alphabet_soup_1": (-0.1, -0.15), "tomato_sauce_1": (-0.12, 0.06)}


@pytest.mark.parametrize("chunk", [1, 8], ids=["closed-loop", "chunk-8"])
def test_plan_puts_both_objects_in_the_basket(chunk: int) -> None:
    arm = PointArm(OBJECTS)
    controller = PickPlaceController(plan_for(TASK0))
    steps = run(controller, arm, chunk)
    assert controller.phase is Phase.DONE and steps < 400
    assert arm.in_basket("alphabet_soup_1") and arm.in_basket("tomato_sauce_1")
    soup, sauce = arm.objects["alphabet_soup_1"], arm.objects["tomato_sauce_1"]
    assert abs(soup[1] - sauce[1]) > 0.04, "the two objects land side by side"


GRASP_Z = TABLE_Z + 0.035 + CAN.height  # end-effector height at a can's grasp


@pytest.mark.parametrize(
    ("phase", "low", "high"),
    [
        (Phase.DESCEND, GRASP_Z + 0.05, 1.0),  # lets go above the object, never reaches it
        (Phase.CLOSE, GRASP_Z - 0.01, GRASP_Z + 0.01),  # opens at the grasp instead of closing
        (Phase.LIFT, GRASP_Z - 0.01, GRASP_Z + 0.02),  # closed, then opens before lifting
        (Phase.CARRY, GRASP_Z + 0.1, 1.0),  # lifted to carrying height, then dropped
    ],
    ids=["descend", "close", "lift", "carry"],
)
def test_drop_abandons_the_last_object_at_its_phase(phase: Phase, low: float, high: float) -> None:
    arm = PointArm(OBJECTS)
    controller = PickPlaceController(plan_for(TASK0), drop_at=phase)
    run(controller, arm, chunk=1)  # closed loop: the arm stops right where the phase began
    for action in controller.act(arm.obs(), 8):  # DONE: hold still, gripper open
        arm.step(action)
    assert controller.phase is Phase.DONE and controller.step_index == 1
    assert arm.in_basket("alphabet_soup_1") and not arm.in_basket("tomato_sauce_1")
    assert low <= arm.eef[2] <= high, f"the arm let go at {arm.eef[2]:.3f} m"
    assert arm.held is None
    assert np.allclose(arm.objects["tomato_sauce_1"][:2], OBJECTS["tomato_sauce_1"], atol=0.02)


@pytest.mark.parametrize(
    ("floor", "tries"),
    [(GRASP_Z + 0.01, 0), (GRASP_Z + 0.05, pick_place.MAX_GRASP_TRIES - 1)],
    ids=["blocked-at-the-object-grasps-there", "blocked-on-a-rim-retries-then-grasps"],
)
def test_a_stalled_descent_closes_near_the_grasp_height_and_retries_above_it(
    floor: float, tries: int
) -> None:
    arm = PointArm({"alphabet_soup_1": OBJECTS["alphabet_soup_1"]}, floor=floor)
    controller = PickPlaceController(plan_for(TASK0)[:1])
    close_z = None
    for _ in range(120):
        actions = controller.act(arm.obs(), 8)
        if controller.phase is Phase.CLOSE and close_z is None:
            close_z = float(arm.eef[2])  # the stall was noticed at this chunk's start
        if controller.phase is Phase.LIFT:
            break
        for action in actions:
            arm.step(action)
    assert close_z is not None and controller.tries == tries
    assert abs(close_z - floor) < 0.005, "closed where the descent stopped"


def test_failed_grasps_are_retried_then_given_up() -> None:
    arm = PointArm(OBJECTS, grip=False)
    controller = PickPlaceController(plan_for(TASK0))
    tries_seen = set()
    for _ in range(200):
        tries_seen.add(controller.tries)
        for action in controller.act(arm.obs(), 8):
            arm.step(action)
    assert tries_seen >= {0, 1, pick_place.MAX_GRASP_TRIES - 1}
    assert controller.step_index >= 1, "after the last try the controller carries on"
    assert not arm.in_basket("alphabet_soup_1")


def test_targets_follow_an_object_that_moved() -> None:
    arm = PointArm(OBJECTS)
    controller = PickPlaceController(plan_for(TASK0))
    for action in controller.act(arm.obs(), 8):
        arm.step(action)
    arm.objects["alphabet_soup_1"][:2] = (0.05, -0.2)  # nudged before it is grasped
    run(controller, arm, chunk=8)
    assert arm.in_basket("alphabet_soup_1")


def test_actions_are_bounded_and_float32() -> None:
    arm = PointArm(OBJECTS)
    actions = PickPlaceController(plan_for(TASK0)).act(arm.obs(), 8)
    assert actions.shape == (8, 7) and actions.dtype == np.float32
    assert np.abs(actions).max() <= 1.0
    assert (actions[:, 6] == pick_place.GRIPPER_OPEN).all(), "it approaches with the gripper open"


@pytest.mark.parametrize(
    ("task", "objects"),
    [
        (TASK0, ["alphabet_soup_1", "tomato_sauce_1"]),
        ("put both the cream cheese box and the butter in the basket", ["cream_cheese_1", "butter_1"]),
        (
            "put both the alphabet soup and the cream cheese box in the basket",
            ["alphabet_soup_1", "cream_cheese_1"],
        ),
    ],
    ids=["libero_10-task-0", "libero_10-task-1", "libero_10-task-7"],
)
def test_basket_tasks_have_plans(task: str, objects: list[str]) -> None:
    plan = plan_for(task)
    assert [step.obj for step in plan] == objects and {step.container for step in plan} == {"basket_1"}
    assert plan[0].offset != plan[1].offset, "the two objects get their own spots in the basket"


def test_unknown_tasks_and_empty_plans_fail() -> None:
    with pytest.raises(ValueError, match=r"no plan for task 'open the microwave'; it solves: 'put both"):
        plan_for("open the microwave")
    with pytest.raises(ValueError, match="at least one step"):
        PickPlaceController([])


# ---------------------------------------------------------------------------- grasp geometry

BOX_PLAN = PLANS["put both the cream cheese box and the butter in the basket"]
BOX = np.array([0.08, -0.19, 0.446])
SQUARE = np.array([0.0, 0.0, 1.0, 0.0])  # cream cheese at its nominal yaw: long side along x
SLIDE, PLAY = BOX_PLAN[0].grasp.slide, BOX_PLAN[0].grasp.play


def near(dx: float, dy: float, dz: float) -> np.ndarray:
    return BOX + np.array([dx, dy, dz])


def _box_grasp(neighbours: dict[str, np.ndarray]) -> np.ndarray:
    raw = {"cream_cheese_1_pos": BOX, "cream_cheese_1_quat": SQUARE, "basket_1_pos": near(0.0, 0.6, 0.0)}
    shift, yaw = grasping.grasp_pose(BOX_PLAN[0], {**raw, **neighbours})
    assert yaw == pytest.approx(0.0) and shift[2] == 0.0
    return shift[:2]


def test_an_uncluttered_box_is_grasped_at_its_centre() -> None:
    assert not _box_grasp({}).any()
    assert not _box_grasp({"milk_1_pos": near(0.0, 0.25, 0.06)}).any(), "far neighbours don't count"


@pytest.mark.parametrize(
    ("neighbours", "away"),
    [
        ({"milk_1_pos": near(0.0, 0.095, 0.06)}, (0.0, -1.0)),  # a tall carton in line with the fingers
        ({"milk_1_pos": near(0.0, -0.095, 0.06)}, (0.0, 1.0)),
        ({"ketchup_1_pos": near(0.05, 0.09, 0.06)}, (-1.0, -1.0)),
        ({"basket_1_pos": near(0.0, 0.17, -0.014)}, (0.0, -1.0)),  # the basket's rim in line
    ],
    ids=["carton-at-+y", "carton-at--y", "carton-diagonal", "basket-rim-at-+y"],
)
def test_a_box_grasp_moves_away_from_a_close_neighbour(neighbours: dict, away: tuple[float, float]) -> None:
    shift = _box_grasp(neighbours)
    assert np.abs(shift).max() <= max(SLIDE, PLAY) + 1e-9, "within the box's play"
    assert np.dot(shift, away) > 0.0, f"grasp shifted by {shift}, towards the neighbour"


def test_can_grasps_stay_centred() -> None:
    raw = PointArm(OBJECTS).obs() | {"milk_1_pos": np.array([-0.1, -0.08, 0.5])}
    shift, yaw = grasping.grasp_pose(plan_for(TASK0)[0], raw)
    assert not shift.any() and yaw == 0.0


@pytest.mark.parametrize(
    ("object_yaw", "expected"),
    [(np.pi, 0.0), (np.pi + 0.2, 0.2), (0.1, 0.1), (np.pi / 2 + 0.1, -np.pi / 2 + 0.1)],
    ids=["nominal", "turned", "half-turn-is-the-same-grasp", "wraps-to-a-quarter-turn"],
)
def test_box_grasp_yaw_is_taken_modulo_a_half_turn(object_yaw: float, expected: float) -> None:
    grasp = PLANS["put both the cream cheese box and the butter in the basket"][0].grasp
    quat = [0.0, 0.0, np.sin(object_yaw / 2), np.cos(object_yaw / 2)]
    assert grasp_yaw(grasp, quat) == pytest.approx(expected)
