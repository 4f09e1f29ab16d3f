"""Two labelled episodes made by scripts/make_classifier_data.py and checked again by the simulator,
in a process of their own.

    python -m tests.support.labelled_episodes OUT_DIR

The simulator renders through EGL in the calling process (the data script's ``LabelledScene``
holds its envs in-process, unlike ``LiberoEnv``'s workers); a test process that later loads
triton (torch's compiler, which RLinf's imports pull in) beside a freed EGL context segfaults. So
the test runs this in a child and reads ``OUT_DIR/check.json``: the episodes (task 0: trial 10, the
clean expert, a success; trial 1009, a state the task's placement sampler drew, the random policy,
cut at 40 steps; trial 11, the clean expert played on to the step limit, ``--to-horizon``) and,
for every kept frame, its label beside what LIBERO's own ``_check_success``
says after the episode is replayed from its seed and the camera env set to that frame's state; and
how far the sampled state is from LIBERO's nearest one and from itself drawn again.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLED = 1009  # a sampled state (reward_eval.libero_task.SAMPLED_TRIAL0 on) the random policy plays
# (trial, split, step limit, to_horizon): the script's limit for the successes, a short one for the
# random policy.
PLAYS = ((10, "train", 400, False), (SAMPLED, "held_out", 40, False), (11, "train", 400, True))


def data_script():
    spec = importlib.util.spec_from_file_location(
        "make_classifier_data", REPO / "scripts" / "make_classifier_data.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(out: Path) -> int:
    import numpy as np

    from reward_eval.classifier.simulation import LabelledScene
    from reward_eval.libero_task import initial_state

    script = data_script()
    scene = LabelledScene(script.SUITE, 0, 64)
    episodes, checks = [], []
    for trial, split, max_steps, to_horizon in PLAYS:
        script.MAX_STEPS = max_steps
        episode = script.make_episode(scene, 0, trial, 0, out, split, to_horizon=to_horizon)
        kwargs = dict(episode.policy_kwargs)
        replay = scene.play(
            trial, episode.policy, kwargs, episode.seed, max_steps, script.AFTER_STEPS, to_horizon
        )
        for frames in episode.frame_sets():
            for step, label, fraction in zip(frames.steps, frames.success, frames.goal_fraction, strict=True):
                scene.camera.regenerate_obs_from_state(replay.states[step])
                checks.append([label, bool(scene.camera.env._check_success()), fraction])
        episodes.append({**episode.to_json(), "replayed_end": replay.end})
    sampled = [initial_state(scene.physics, scene.states, SAMPLED) for _ in range(2)]
    distances = {
        "to_libero": float(np.abs(scene.states - sampled[0]).max(axis=1).min()),
        "redrawn": float(np.abs(sampled[1] - sampled[0]).max()),
    }
    scene.close()
    check = {"episodes": episodes, "checks": checks, "sampled": distances}
    (out / "check.json").write_text(json.dumps(check))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
