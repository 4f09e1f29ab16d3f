"""Task 0's scene as robosuite's raw observation holds it at the reset pose: what the expert reads.

Shared by the policy tests (``tests/reward_eval/test_reward_eval_policies.py``) and the learning
policy's (``tests/examples/test_cpu_learn_policy.py``), which need no simulator.
"""

from __future__ import annotations

import numpy as np

TASK0 = "put both the alphabet soup and the tomato sauce in the basket"


def task0_raw_obs() -> dict[str, np.ndarray]:
    """A fresh copy of task 0's raw observation at the reset pose (end effector, both cans, basket)."""
    return {
        "robot0_eef_pos": np.array([-0.04, 0.0, 0.70]),
        "robot0_eef_quat": np.array([1.0, 0.0, 0.0, 0.0]),
        "alphabet_soup_1_pos": np.array([-0.1, -0.15, 0.475]),
        "alphabet_soup_1_quat": np.array([0.0, 0.707, 0.707, 0.0]),
        "tomato_sauce_1_pos": np.array([-0.12, 0.06, 0.475]),
        "tomato_sauce_1_quat": np.array([0.0, 0.707, 0.707, 0.0]),
        "basket_1_pos": np.array([0.0, 0.27, 0.432]),
    }
