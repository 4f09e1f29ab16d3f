"""The pick-and-place controller against a kinematic arm, and its rotation helpers.

``PointArm`` is a narrow stand-in for LIBERO (the real simulator runs in
``test_reward_eval_expert_libero.py``): the end effector moves by exactly the speed the
controller predicts, a closed gripper over an object carries it, and an opened one drops
it straight down. It checks the phase logic, the retries and the drop, in milliseconds.
"""

from __future__ import annotations

import numpy as np
import pytest

from examples.embodiment.reward_eval.policies import pick_place
from examples.embodiment.reward_eval.policies.libero_plans import PLANS, plan_for
from examples.embodiment.reward_eval.policies.pick_place import (
    MAX_SPEED,
    MAX_TURN,
    Phase,
    PickPlaceController,
    grasp_yaw,
)
from examples.embodiment.reward_eval.policies.rotations import matrix_to_rotvec, rotvec_to_matrix

TABLE_Z = 0.44
BASKET = np.array([0.0, 0.27, 0.432])
TASK0 = "put both the alphabet soup and the tomato sauce in the basket"


class PointArm:
    """Kinematic arm and objects; ``grip`` False makes every grasp slip (a failed grasp)."""

    def __init__(self, objects: dict[str, tuple[float, float]], grip: bool = True) -> None:
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


@pytest.mark.parametrize(
    "phase", [Phase.DESCEND, Phase.CLOSE, Phase.LIFT, Phase.CARRY], ids=lambda p: p.value
)
def test_drop_abandons_the_last_object_only(phase: Phase) -> None:
    arm = PointArm(OBJECTS)
    controller = PickPlaceController(plan_for(TASK0), drop_at=phase)
    run(controller, arm, chunk=8)
    assert controller.phase is Phase.DONE and controller.step_index == 1
    assert arm.in_basket("alphabet_soup_1") and not arm.in_basket("tomato_sauce_1")
    assert arm.held is None, "the gripper is open after the drop"


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


def test_plans_cover_the_three_basket_tasks_and_unknown_tasks_fail() -> None:
    assert len(PLANS) == 3 and all(len(plan) == 2 for plan in PLANS.values())
    with pytest.raises(ValueError, match=r"no plan for task 'open the microwave'; it solves: 'put both"):
        plan_for("open the microwave")
    with pytest.raises(ValueError, match="at least one step"):
        PickPlaceController([])


@pytest.mark.parametrize(
    ("object_yaw", "expected"),
    [(np.pi, 0.0), (np.pi + 0.2, 0.2), (0.1, 0.1), (np.pi / 2 + 0.1, -np.pi / 2 + 0.1)],
    ids=["nominal", "turned", "half-turn-is-the-same-grasp", "wraps-to-a-quarter-turn"],
)
def test_box_grasp_yaw_is_taken_modulo_a_half_turn(object_yaw: float, expected: float) -> None:
    grasp = PLANS["put both the cream cheese box and the butter in the basket"][0].grasp
    quat = [0.0, 0.0, np.sin(object_yaw / 2), np.cos(object_yaw / 2)]
    assert grasp_yaw(grasp, quat) == pytest.approx(expected)
