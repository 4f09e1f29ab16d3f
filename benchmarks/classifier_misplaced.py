"""What a classifier says of objects let go off the basket's centre (issue 42's failures), in process.

    PYTHONPATH=. .venv/bin/python benchmarks/classifier_misplaced.py --model DIR [--offset 0.08]

The scripted expert plays task 0 of libero_10 from its held-out initial states 0 and 1 (never
trained on: the main job's) with both release points moved ``--offset`` metres from the plan's
(``release``, :mod:`reward_eval.policies.expert`): along x (both objects set down beside the basket)
and along y (the plan puts them 3 cm either side of the centre: one lands inside, one beyond the
rim), plus the plan itself. Each episode is played and rendered as the labelled set's are
(:class:`reward_eval.classifier.simulation.LabelledScene`, 128 px, 400 steps, the 16 frames the
env's client sends, through the MP4) and judged by the checkpoint in process (its aggregate: the last frame's
P(success) by default). Prints one line per episode: the simulator's goal fraction at the end, its
native success and the classifier's score.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: make the repo importable
    sys.path.insert(0, str(REPO))

from reward_eval.classifier.simulation import LabelledScene  # noqa: E402
from reward_eval.job.main_job import MAIN_JOB  # noqa: E402
from reward_eval.policies.libero_plans import LEFT, RIGHT  # noqa: E402

TASK, TRIALS, CAMERA = 0, (0, 1), 128


def releases(offset: float) -> dict[str, list[list[float]]]:
    """The release points of each way to let go: the plan's, and moved along x, along y."""
    return {
        "plan": [list(LEFT), list(RIGHT)],
        f"x +{offset:g} m": [[LEFT[0] + offset, LEFT[1]], [RIGHT[0] + offset, RIGHT[1]]],
        f"y +{offset:g} m": [[LEFT[0], LEFT[1] + offset], [RIGHT[0], RIGHT[1] + offset]],
    }


def served(frames: Any, path: Path) -> Any:
    """``frames`` as a judge receives them: encoded into the MP4 the env's client sends, decoded."""
    from vlm_reward.protocol import DEFAULT_VIDEO_FPS
    from vlm_reward.video_io import decode_clip, encode_mp4, probe_video

    encode_mp4(frames, path, fps=DEFAULT_VIDEO_FPS)
    probe = probe_video(path)
    return decode_clip(path, range(probe.num_frames), probe).frames


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    from reward_eval.classifier.training import probabilities
    from vlm_reward.backends.resnet_checkpoint import (
        WEIGHTS_FILE,
        build_model,
        episode_score,
        model_input,
        read_config,
        scored_frames,
    )
    from vlm_reward.frames import evenly_spaced
    from vlm_reward.protocol import DEFAULT_NFRAMES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="classifier checkpoint directory")
    parser.add_argument("--offset", type=float, default=0.08, help="metres (default %(default)s)")
    args = parser.parse_args(argv)
    config = read_config(args.model)
    model = build_model(config, str(args.model / WEIGHTS_FILE))
    scene = LabelledScene("libero_10", TASK, CAMERA)
    tmp = tempfile.TemporaryDirectory()
    try:
        for name, release in releases(args.offset).items():
            for trial in TRIALS:
                kwargs = {"release": release}
                played = scene.play(trial, "expert", kwargs, 0, MAIN_JOB.max_episode_steps, after=0)
                steps = evenly_spaced(played.end + 1, DEFAULT_NFRAMES)
                frames = served(
                    np.stack([scene.render(played.states[s]) for s in steps]), Path(tmp.name) / "e.mp4"
                )
                picked = frames[scored_frames(len(frames), config)]
                score = episode_score(probabilities(model, model_input(picked, config.image_size)), config)
                print(
                    f"task {TASK} trial {trial}, release {name}: goal fraction "
                    f"{played.goal_fraction[played.end]:g}, native success {played.native_success}, "
                    f"classifier {score:.3f}",
                    flush=True,
                )
    finally:
        scene.close()
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
