"""Episodes seen by both of LIBERO's cameras, for the benchmarks that send what a policy saw.

RLinf's API reward example shows its judge a main and an extra camera; on LIBERO, whose env has
no extra view, the re-creation (:mod:`benchmarks.rlinf_api_request`) shows the main and the wrist
camera. This project's client sends the main one. An
:class:`Episode` holds both views' frames, oldest first, from LIBERO's renderer
(:func:`render_libero`, the main venv) or made up (:func:`synthetic`, anywhere).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from benchmarks.harness import synthetic_frames


@dataclass
class Episode:
    """One episode's task and both views' frames, oldest first."""

    task: str
    views: dict[str, list[np.ndarray]]


def render_libero(count: int, steps: int, size: int) -> list[Episode]:
    """``count`` episodes of libero_10 task 0 of ``steps`` steps each (initial state i, a seeded
    random walk of the arm), both cameras, upright as LiberoEnv gives them to the policy. One
    simulator for all of them: MuJoCo's EGL context has crashed here when envs were made one after
    another in one process."""
    from libero.libero import benchmark, get_libero_path
    from libero.libero.envs import OffScreenRenderEnv

    suite = benchmark.get_benchmark_dict()["libero_10"]()
    task = suite.get_task(0)
    bddl = os.path.join(get_libero_path("bddl_files"), task.problem_folder, task.bddl_file)
    env = OffScreenRenderEnv(bddl_file_name=bddl, camera_heights=size, camera_widths=size)
    episodes = []
    try:
        env.seed(0)
        for i in range(count):
            env.reset()
            obs = env.set_init_state(suite.get_task_init_states(0)[i])
            rng = np.random.default_rng(i)
            views: dict[str, list[np.ndarray]] = {"main_images": [], "wrist_images": []}
            for _ in range(steps):
                views["main_images"].append(np.ascontiguousarray(obs["agentview_image"][::-1, ::-1]))
                views["wrist_images"].append(
                    np.ascontiguousarray(obs["robot0_eye_in_hand_image"][::-1, ::-1])
                )
                obs, *_ = env.step(np.append(rng.uniform(-0.5, 0.5, 6), -1.0))
            episodes.append(Episode(task.language, views))
    finally:
        env.close()
    return episodes


def synthetic(count: int, steps: int, size: int) -> list[Episode]:
    """Textured scenes with a moving square, a different one per episode and view."""
    return [
        Episode(
            f"put object {i} in the basket",
            {
                "main_images": list(synthetic_frames(steps, size, seed=2 * i)),
                "wrist_images": list(synthetic_frames(steps, size, seed=2 * i + 1)),
            },
        )
        for i in range(count)
    ]
