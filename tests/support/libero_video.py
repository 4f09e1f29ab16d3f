"""A short MP4 of real LIBERO frames, rendered at test time (nothing binary is committed).

``python -m tests.support.libero_video OUT.mp4`` (the main venv: LIBERO lives there) renders
libero_10 task 0 from its first initial state, seen by the policy's main camera, while the
arm moves up and then forward, and writes :data:`NFRAMES` frames at :data:`FPS` with the
reward client's own encoder. Run it in a subprocess: a LIBERO env holds a few GB and a
MuJoCo GL context, which the test process should not keep. Takes 10-30 s.

The simulator, the renderer and the encoder are deterministic on one machine, so the
same file comes back every time, and tests can pin what a seeded model says about it.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

TASK_SUITE, TASK_ID = "libero_10", 0
NFRAMES, SIZE, FPS = 16, 128, 4.0
# End-effector deltas (x, y, z, roll, pitch, yaw) and the gripper: up for half the clip,
# then forward, so consecutive frames differ as in a real episode.
UP = [0.0, 0.0, 0.8, 0.0, 0.0, 0.0, -1.0]
FORWARD = [0.8, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0]


def task_text() -> str:
    """The language instruction of the rendered task."""
    from libero.libero import benchmark

    return benchmark.get_benchmark_dict()[TASK_SUITE]().get_task(TASK_ID).language


def render_frames() -> np.ndarray:
    """``(NFRAMES, SIZE, SIZE, 3)`` uint8 frames of the main camera, upright like LiberoEnv's."""
    from libero.libero import benchmark, get_libero_path
    from libero.libero.envs import OffScreenRenderEnv

    suite = benchmark.get_benchmark_dict()[TASK_SUITE]()
    task = suite.get_task(TASK_ID)
    bddl = os.path.join(get_libero_path("bddl_files"), task.problem_folder, task.bddl_file)
    env = OffScreenRenderEnv(bddl_file_name=bddl, camera_heights=SIZE, camera_widths=SIZE)
    try:
        env.seed(0)
        env.reset()
        obs = env.set_init_state(suite.get_task_init_states(TASK_ID)[0])
        frames = [obs["agentview_image"]]
        for step in range(NFRAMES - 1):
            obs, *_ = env.step(UP if step < NFRAMES // 2 else FORWARD)
            frames.append(obs["agentview_image"])
    finally:
        env.close()
    # LIBERO's renderer is upside down; RLinf's LiberoEnv flips both axes for the policy.
    return np.ascontiguousarray(np.stack(frames)[:, ::-1, ::-1])


def main(argv: list[str] | None = None) -> None:
    """Render the clip to OUT and print its task text."""
    from vlm_reward.video_io import encode_mp4

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="MP4 to write")
    args = parser.parse_args(argv)
    encode_mp4(render_frames(), args.out, fps=FPS)
    print(task_text())


if __name__ == "__main__":
    main()
