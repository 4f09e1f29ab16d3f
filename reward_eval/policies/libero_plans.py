"""Which object goes where, per LIBERO task: the scripted expert's plans.

The plans are keyed by the task's language instruction (what ``env.task_descriptions``
holds), so they hold for any suite that reuses a scene. Grasp heights and rims are facts
of the LIBERO assets, measured from their collision geometry in the simulator.
"""

from __future__ import annotations

from reward_eval.policies.grasping import Container, Grasp, PickPlace

CAN = Grasp(height=0.012, hang=0.05)  # alphabet soup, tomato sauce: 7.6 cm tall, 6.3 cm wide
# cream cheese (8.0 x 4.2 x 1.8 cm), butter (7.7 x 3.9 x 1.7 cm): long side along x at
# their nominal yaw (quaternion z = 1, a half turn), which the fingers span as they are.
# The fingers open to 8 cm, so the grasp may shift 1.5 cm across a box and 2 cm along it.
FLAT_BOX = Grasp(
    height=0.008, hang=0.02, align_yaw=True, yaw_offset=3.141592653589793, slide=0.02, play=0.015
)
BASKET = Container(rim=0.146, radius=0.085)  # rim 14.6 cm above basket_1_pos, 17 cm wide

GRASPS = {"alphabet_soup": CAN, "tomato_sauce": CAN, "cream_cheese": FLAT_BOX, "butter": FLAT_BOX}

# Two objects share the basket (inner half-width ~6 cm): one left, one right of centre.
LEFT, RIGHT = (0.0, -0.03), (0.0, 0.03)


def _into_basket(first: str, second: str) -> list[PickPlace]:
    return [
        PickPlace(f"{first}_1", GRASPS[first], "basket_1", BASKET, LEFT),
        PickPlace(f"{second}_1", GRASPS[second], "basket_1", BASKET, RIGHT),
    ]


PLANS: dict[str, list[PickPlace]] = {
    "put both the alphabet soup and the tomato sauce in the basket": _into_basket(
        "alphabet_soup", "tomato_sauce"
    ),
    "put both the cream cheese box and the butter in the basket": _into_basket("cream_cheese", "butter"),
    "put both the alphabet soup and the cream cheese box in the basket": _into_basket(
        "alphabet_soup", "cream_cheese"
    ),
}


def plan_for(task: str) -> list[PickPlace]:
    """The plan that solves ``task``; ``ValueError`` naming the solvable tasks otherwise."""
    if task not in PLANS:
        known = "; ".join(repr(t) for t in PLANS)
        raise ValueError(f"the scripted expert has no plan for task {task!r}; it solves: {known}.")
    return PLANS[task]
