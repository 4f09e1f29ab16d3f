"""Make the classifier's labelled frame set (``reward_eval/classifier/data``) from the simulator.

    nice -n 10 timeout 3600 .venv/bin/python scripts/make_classifier_data.py [--out DIR] [--variants NAME]

One episode per initial state of libero_10 tasks 0, 1 and 7 (50 each), the policy chosen by the
trial (:data:`VARIANT_TABLES`, in turn): the scripted expert as it is (successes), the expert
dropping its last object at each phase (near misses: one object in the basket, the other not), the
expert with action noise 0.2 (mostly failures), and the random policy (other policies' failures).
``--variants near_miss`` turns two of the five clean experts into the expert letting each object
go at a point jittered by 7 cm (on the rim or beside the basket when it misses: the learning
comparison's kind of near miss, which the default set has none of). ``--sampled [FIRST]`` plays states
the task's placement sampler draws (trials FIRST on, 1000 by default:
:func:`reward_eval.libero_task.initial_state`) instead of LIBERO's 50, so sets made from ranges
that do not overlap share no state; ``--train-only`` puts every state in the train split;
``--to-horizon`` plays every episode to the step limit, a success included, and serves its frames
over all of it, as the judge-only learning runs' env does (``--variants release``: the learning
policy's own releases; ``--variants learning``: that policy alone). ``--trial-ids`` plays the
initial states it names (the learning comparison's, say) instead of the first ``--trials``. Together
they make a set to train on beside another (``reward-eval finetune --data A --data B``) that shares
no initial state with it. Each episode is played
without cameras and only its kept frames are rendered (:mod:`reward_eval.classifier.simulation`):
the ``nframes`` frames the env's client would send a judge, and for a success six more over the
48 steps after it. Every frame is labelled by the simulator
(:mod:`reward_eval.classifier.labelled_set`) and goes through one path (render at ``--camera``
px, MP4 encode, later decode), so a classifier cannot tell the classes by the codec.

The split is drawn here, by initial state, and written into the manifest: a quarter of each
task's states held out, half of those (the reserved ones excepted) the test split; the main job's
and the self-test's initial states are always held out. Reproducible from ``--seed``: every
episode's policy seed is a function of it, its task and its trial. An interrupted run resumes:
the episodes already in ``DIR/episodes.jsonl`` are not played again.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from reward_eval.classifier.labelled_set import (  # noqa: E402
    DEFAULT_DATA_DIR,
    TEST_FRACTION,
    LabelledEpisode,
    LabelledFrames,
    choose_held_out,
    choose_test,
    write_manifest,
)
from reward_eval.classifier.simulation import LabelledScene, Trajectory  # noqa: E402
from reward_eval.job.main_job import MAIN_JOB  # noqa: E402
from reward_eval.libero_task import SAMPLED_TRIAL0  # noqa: E402
from vlm_reward.frames import evenly_spaced  # noqa: E402
from vlm_reward.protocol import DEFAULT_NFRAMES, DEFAULT_VIDEO_FPS  # noqa: E402
from vlm_reward.video_io import encode_mp4  # noqa: E402

SUITE = "libero_10"
TASKS = (0, 1, 7)  # the basket tasks the scripted expert solves
TRIALS = 50
MAX_STEPS = MAIN_JOB.max_episode_steps  # the set's episodes end where the main command's would
AFTER_STEPS, AFTER_EVERY = 48, 8  # frames of a success's goal holding: 6, one per 8 steps
HOLDOUT_FRACTION = 0.25
PROGRESS = "episodes.jsonl"
Variant = tuple[str, str, dict[str, Any]]  # (name, policy, policy kwargs)
EXPERT: Variant = ("expert", "expert", {})
# Each release point jittered by a 7 cm Gaussian: the expert's points are 3 cm from the basket's
# centre, so some objects land in it and some on its rim or beside it (labelled by the simulator).
BESIDE: Variant = ("beside", "expert", {"place_noise": 0.07})
FAILURES: tuple[Variant, ...] = (
    ("drop_carry", "expert", {"drop": "carry"}),
    ("drop_lift", "expert", {"drop": "lift"}),
    ("drop_close", "expert", {"drop": "close"}),
    ("noise", "expert", {"action_noise": 0.2}),
    ("random", "random", {}),
)


def released(off: float) -> Variant:
    """The learning comparison's policy (``examples/embodiment/cpu_learn/policy.py``) at release
    means ``off`` metres either side of the basket's centre: each object let go at a point drawn
    around its mean with its 1.5 cm spread (the expert's own points are 3 cm off; the policy
    starts at 7)."""
    mean = [[0.0, -off], [0.0, off]]
    return (f"release{round(off * 100)}", "expert", {"release": mean, "place_noise": 0.015})


# Trial t of task k plays table[(t + k) % len(table)]. "default" made the shipped set.
VARIANT_TABLES: dict[str, tuple[Variant, ...]] = {
    "default": (EXPERT,) * 5 + FAILURES,
    "near_miss": (EXPERT,) * 3 + (BESIDE,) * 2 + FAILURES,
    # The learning policy's episodes from its start to the expert's points, and two near misses.
    "release": (released(0.03), released(0.05), released(0.07)) * 2 + FAILURES[:2],
    # The learning policy alone, at means its runs move through (7 cm at the start; 3-6 cm after
    # five native GRPO steps): its own successes and misses, to measure a judge on (from its
    # states: --trial-ids).
    "learning": (released(0.07), released(0.06), released(0.05)),
}
# The tables that play the learning comparison's policy, not the shipped set's turns.
LEARNING_TABLES = ("release", "learning")
VARIANTS = VARIANT_TABLES["default"]


def variant_of(task: int, trial: int, variants: Sequence[Variant] = VARIANTS) -> Variant:
    """The policy an initial state is played with (see :data:`VARIANT_TABLES`)."""
    return variants[(trial + task) % len(variants)]


def episode_seed(seed: int, task: int, trial: int) -> int:
    """The policy seed of one episode, from the set's seed, its task and its trial only."""
    return int(np.random.SeedSequence([seed, task, trial]).generate_state(1)[0])


def labelled(
    scene: LabelledScene, trajectory: Trajectory, steps: Sequence[int], path: Path
) -> LabelledFrames:
    """Render ``steps`` of ``trajectory``, encode them to ``path``, and label them."""
    frames = np.stack([scene.render(trajectory.states[s]) for s in steps])
    encode_mp4(frames, path, fps=DEFAULT_VIDEO_FPS)
    return LabelledFrames(
        path.name,
        tuple(steps),
        tuple(trajectory.success[s] for s in steps),
        tuple(trajectory.goal_fraction[s] for s in steps),
    )


def make_episode(
    scene: LabelledScene,
    task: int,
    trial: int,
    seed: int,
    out: Path,
    split: str,
    variants: Sequence[Variant] = VARIANTS,
    to_horizon: bool = False,
) -> LabelledEpisode:
    """Play, render, encode and label one episode into ``out`` (``to_horizon``: see
    :meth:`LabelledScene.play`; such an episode has no frames after its end)."""
    name, policy, kwargs = variant_of(task, trial, variants)
    episode_seed_ = episode_seed(seed, task, trial)
    trajectory = scene.play(trial, policy, kwargs, episode_seed_, MAX_STEPS, AFTER_STEPS, to_horizon)
    stem = f"t{task}_s{trial:02d}_{name}"
    served = labelled(
        scene, trajectory, evenly_spaced(trajectory.end + 1, DEFAULT_NFRAMES), out / f"{stem}.mp4"
    )
    after_steps = list(range(trajectory.end + AFTER_EVERY, len(trajectory.states), AFTER_EVERY))
    after = labelled(scene, trajectory, after_steps, out / f"{stem}_after.mp4") if after_steps else None
    return LabelledEpisode(
        task, scene.language, trial, policy, kwargs, episode_seed_, trajectory.native_success,
        trajectory.end, split, served, after, name,
    )  # fmt: skip


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """What the set was made with (the manifest's ``settings``)."""
    return {
        "suite": SUITE,
        "tasks": list(args.tasks),
        "trials": args.trials if args.trial_ids is None else len(args.trial_ids),
        "trial_ids": args.trial_ids,  # the states played when not the first --trials
        "camera": args.camera,
        "seed": args.seed,
        "max_steps": MAX_STEPS,
        "nframes": DEFAULT_NFRAMES,
        "after": [AFTER_STEPS, AFTER_EVERY],
        "sampled": args.sampled is not None,  # from which trial: the episodes' trial ids
        "train_only": args.train_only,
        "to_horizon": args.to_horizon,  # successes ran on to max_steps (judge-only runs' episodes)
        "holdout_fraction": HOLDOUT_FRACTION,
        "test_fraction": TEST_FRACTION,
        "variant_table": args.variants,
        "variants": [list(v) for v in VARIANT_TABLES[args.variants]],
        "note": "Regenerate with scripts/make_classifier_data.py.",
    }


def resumed(progress: Path) -> dict[tuple[int, int], LabelledEpisode]:
    """The episodes an earlier, interrupted run already made."""
    if not progress.is_file():
        return {}
    episodes = [LabelledEpisode.from_json(json.loads(line)) for line in progress.read_text().splitlines()]
    return {e.state: e for e in episodes}


def trials(args: argparse.Namespace) -> Sequence[int]:
    """Each task's trials: ``--trial-ids``, or LIBERO's first ``--trials``, or as many sampled ones
    from ``--sampled``."""
    if args.trial_ids is not None:
        return args.trial_ids
    first = 0 if args.sampled is None else args.sampled
    return range(first, first + args.trials)


def splits(args: argparse.Namespace, states: Sequence[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """Each state's split: drawn (:func:`choose_held_out`, :func:`choose_test`), or all train."""
    if args.train_only:
        return dict.fromkeys(states, "train")
    held = choose_held_out(states, HOLDOUT_FRACTION, args.seed)
    test = choose_test(held, TEST_FRACTION, args.seed)
    return {s: "test" if s in test else "held_out" if s in held else "train" for s in states}


def make_set(args: argparse.Namespace) -> list[LabelledEpisode]:
    """Every episode of the set, task by task (one simulator process), resuming from ``PROGRESS``."""
    states = [(task, trial) for task in args.tasks for trial in trials(args)]
    variants = VARIANT_TABLES[args.variants]
    split_of = splits(args, states)
    progress = args.out / PROGRESS
    done = resumed(progress)
    start = time.perf_counter()
    for task in args.tasks:
        todo = [trial for trial in trials(args) if (task, trial) not in done]
        if not todo:
            continue
        scene = LabelledScene(SUITE, task, args.camera)
        for trial in todo:
            episode = make_episode(
                scene, task, trial, args.seed, args.out, split_of[task, trial], variants, args.to_horizon
            )
            done[episode.state] = episode
            with progress.open("a") as f:
                f.write(json.dumps(episode.to_json()) + "\n")
            wins = sum(e.native_success for e in done.values())
            print(
                f"[{time.perf_counter() - start:6.0f} s] {len(done)}/{len(states)} episodes, {wins} successes"
            )
        scene.close()
    return [done[state] for state in states]


def sampled_trial(text: str) -> int:
    """``--sampled``'s first trial: an integer from :data:`SAMPLED_TRIAL0` on."""
    try:
        first = int(text)
    except ValueError:
        first = -1
    if first < SAMPLED_TRIAL0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a sampled trial: give an integer >= {SAMPLED_TRIAL0}."
        )
    return first


def trial_ids(text: str) -> list[int]:
    """``--trial-ids``: distinct trials, each one of LIBERO's (0..TRIALS-1) or a sampled one."""
    try:
        ids = [int(t) for t in text.split(",")]
    except ValueError:
        ids = []
    valid = ids and len(set(ids)) == len(ids)
    if not valid or any(not (0 <= t < TRIALS or t >= SAMPLED_TRIAL0) for t in ids):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a list of trials: give distinct comma-separated integers, each in "
            f"0..{TRIALS - 1} (LIBERO's) or >= {SAMPLED_TRIAL0} (sampled)."
        )
    return ids


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line's options (exit 2 with one sentence for a bad one)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_DATA_DIR, help="the set's directory")
    parser.add_argument("--tasks", type=lambda s: [int(t) for t in s.split(",")], default=list(TASKS))
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--trials", type=int, default=TRIALS, help="initial states 0..N-1 of each task")
    which.add_argument(
        "--trial-ids", type=trial_ids, metavar="T,T,...", help="play these initial states of each task"
    )
    parser.add_argument(
        "--camera", type=int, default=128, help="render size in px (the env's camera_heights)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seeds the split and every policy")
    parser.add_argument(
        "--sampled",
        type=sampled_trial,
        nargs="?",
        const=SAMPLED_TRIAL0,
        metavar="FIRST",
        help=f"play states the task's sampler draws, trials FIRST on (default {SAMPLED_TRIAL0})",
    )
    parser.add_argument("--train-only", action="store_true", help="every state in the train split")
    parser.add_argument(
        "--to-horizon",
        action="store_true",
        help="a success does not end its episode, which runs to max_steps (as in judge-only runs)",
    )
    parser.add_argument(
        "--variants",
        choices=sorted(VARIANT_TABLES),
        default="default",
        help="the policies the trials take turns with (default: the shipped set's)",
    )
    args = parser.parse_args(argv)
    if args.trial_ids is not None and args.sampled is not None:
        parser.error("--trial-ids names its states itself: drop --sampled (a sampled trial is >= 1000).")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    episodes = make_set(args)
    write_manifest(args.out, episodes, settings(args))
    (args.out / PROGRESS).unlink()
    size = sum(p.stat().st_size for p in args.out.iterdir())
    frames = sum(len(f.steps) for e in episodes for f in e.frame_sets())
    print(
        f"{len(episodes)} episodes ({sum(e.native_success for e in episodes)} successes), {frames} frames, "
        f"{size / 1e6:.1f} MB in {args.out}, {time.perf_counter() - start:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
