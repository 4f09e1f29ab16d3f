"""Regenerate the reward server's default self-test set (``vlm_reward/self_test_data``).

    flock /tmp/heavy.lock timeout 1800 .venv/bin/python scripts/make_judge_self_test.py [--out DIR]

Runs the real LIBERO simulator with the scripted expert (``reward-eval run --policy expert``,
``drop: carry`` with ``drop_prob`` 0.5: successes and near misses, the object dropped before
the basket) at 128x128 with its videos kept, then writes, for every kept episode, the video the
judge was sent (16 frames) labelled by the simulator's success, and for each success one
counterfactual from the perturbation registry (played backwards, frozen, cut in half, in turn),
labelled a failure, plus ``manifest.json`` (:mod:`vlm_reward.server.self_test`). One
counterfactual per success keeps the set balanced: a judge that always says "no" misjudges every
success, one that always says "yes" every failure, and neither passes the default tolerance. The
judge of the run itself is the tiny random-weight model: only the kept videos and the native
labels are used. Takes about ten minutes here (two LIBERO batches of about 330 steps).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from omegaconf import OmegaConf  # noqa: E402

from reward_eval.analysis.episode_log import episode_logs, kept_episodes  # noqa: E402
from reward_eval.job.env_config import load_env_config  # noqa: E402
from reward_eval.job.main_job import SELF_TEST  # noqa: E402
from reward_eval.job.paths import ENV_CONFIG  # noqa: E402
from reward_eval.judge.counterfactuals import decode_frames  # noqa: E402
from vlm_reward.perturbations import Source, perturb  # noqa: E402
from vlm_reward.server.self_test import DEFAULT_SELF_TEST_DIR, SelfTestCase, write_manifest  # noqa: E402
from vlm_reward.video_io import encode_mp4  # noqa: E402

CAMERA = 128
PERTURBATIONS = ("reversed", "frozen", "clipped")


def roll_out(work: Path) -> Path:
    """The expert's run (kept videos) in ``work/run``."""
    cfg = load_env_config(ENV_CONFIG)
    cfg.init_params.camera_heights = cfg.init_params.camera_widths = CAMERA
    env_config = work / f"libero_10_{CAMERA}px.yaml"
    OmegaConf.save(cfg, env_config)
    run_dir = work / "run"
    command = [
        sys.executable, "-m", "reward_eval", "run", *SELF_TEST.run_args(),
        "--num-envs", str(SELF_TEST.episodes_per_task), "--env-config", str(env_config),
        "--keep-videos", "--no-audit", "--out", str(run_dir),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    subprocess.run(command, check=True, env=env, timeout=1500, stdin=subprocess.DEVNULL)
    return run_dir


def build_set(run_dir: Path, out: Path) -> list[SelfTestCase]:
    """Copy each kept video, labelled, and write each success's counterfactual beside it."""
    cases, successes = [], 0
    for i, episode in enumerate(kept_episodes(episode_logs(run_dir))):
        record, kind = episode.record, "success" if episode.record.native_success else "failure"
        name = f"{i:02d}_task{record.task_id}_{kind}.mp4"
        shutil.copyfile(episode.video, out / name)
        cases.append(SelfTestCase(out / name, str(record.task_text), record.native_success, kind))
        if not record.native_success:
            continue
        frames, fps = decode_frames(episode.video)
        perturbation = PERTURBATIONS[successes % len(PERTURBATIONS)]
        successes += 1
        made = perturb(perturbation, Source(frames, str(record.task_text), None, (SELF_TEST.policy_seed, i)))
        path = out / f"{i:02d}_task{record.task_id}_{perturbation}.mp4"
        encode_mp4(made.frames, path, fps=fps)
        cases.append(SelfTestCase(path, made.task_text, False, perturbation))
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_SELF_TEST_DIR, help="the set's directory")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="judge-self-test-") as tmp:
        run_dir = roll_out(Path(tmp))
        if args.out.exists():
            shutil.rmtree(args.out)
        args.out.mkdir(parents=True)
        cases = build_set(run_dir, args.out)
    tasks = ",".join(map(str, SELF_TEST.tasks))
    spoiler = ", ".join(f"{key} {value}" for key, value in SELF_TEST.policy_kwargs.items())
    note = (
        f"Regenerate with scripts/make_judge_self_test.py: libero_10 tasks {tasks}, the scripted expert "
        f"({spoiler}, seed {SELF_TEST.policy_seed}) at {CAMERA}x{CAMERA}, the 16 frames each "
        f"judge saw, and one counterfactual per success ({', '.join(PERTURBATIONS)}, in turn)."
    )
    write_manifest(args.out, cases, note)
    size = sum(p.stat().st_size for p in args.out.iterdir())
    labels = sum(c.success for c in cases)
    print(f"{len(cases)} cases ({labels} successes) in {args.out}, {size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
