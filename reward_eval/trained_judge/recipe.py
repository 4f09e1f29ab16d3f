"""The VLM judge trained here: how it is made, what it is served, and its stamp.

    .venv/bin/python -m reward_eval.trained_judge.recipe make     # ~21 min on 2 cores; writes CHECKPOINT
    .venv/bin/python -m reward_eval.trained_judge.recipe make --seed 1 --out DIR  # another training seed
    .venv/bin/python -m reward_eval.trained_judge.recipe check    # exit 1 if CHECKPOINT is stale
    .venv/bin/python -m reward_eval.trained_judge.recipe env-config OUT.yaml

The judge is a Qwen2.5-VL of the real architecture at :data:`SIZE` (the checkpoint tool's preset,
random weights from a fixed seed, built offline), fully fine-tuned by ``reward-eval finetune
--data`` on :data:`DATA`: the shipped labelled set (``reward_eval/classifier/data``: its train
split trains, held_out chose these settings, test only reports) and the judge's own set beside it
(:data:`JUDGE_DATA`: 120 episodes of tasks 0, 1 and 7 from initial states the tasks' placement
sampler drew, none of LIBERO's 50, all trained on; two in ten the expert letting each object go at
a point jittered by 7 cm, the learning comparison's kind of near miss). The judge's own set is
there because a judge trained on LIBERO's ~37 training states a task scored every episode of the
learning comparison's policy, from task 0's held-out states, a failure. :data:`FINETUNE_OPTIONS`:
the audit's counterfactuals of every success and four wrong instructions each (none a libero_10
text), so that it must read the instruction and the order of the frames; 40 epochs with a cosine
learning rate (a constant one left the loss bouncing and the encoding deciding three training
episodes). It is shipped in :data:`CHECKPOINT` (weights, processor, the fine-tune's
``finetune.json``), because making it takes longer than set-up may; ``make`` is the one command
that wrote it.

**Stamp.** :data:`STAMP_FILE` in :data:`CHECKPOINT` holds :func:`stamp`: a hash of the sets'
manifests, :data:`SIZE`'s size stamp, :data:`FINETUNE_OPTIONS`, :data:`REQUEST` and the video
positions it was trained with (:data:`vlm_reward.backends.video_positions.LAYOUT`). A test checks
it against the current ones, so a change of the data or the recipe without ``make`` fails the
suite instead of shipping a judge the docs do not describe. The fine-tune's code is not in the
stamp: a fine-tune is not bit-reproducible across CPUs, and its tests cover the code.

**The request** (:data:`REQUEST`): 16 frames at most 19,600 pixels each, which serves the labelled
set's and the learning runs' 128-px renders and the main job's 256-px ones alike at 140x140 (five
visual tokens a side): the size it was trained at, whatever the camera. :func:`env_config` writes the
env YAML with it, which the fine-tune, ``rescore`` and the learning comparison's ``vlm`` run use.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reward_eval.classifier.labelled_set import DEFAULT_DATA_DIR, MANIFEST
from reward_eval.job.paths import ENV_CONFIG, REPO

CHECKPOINT = Path(__file__).resolve().parent / "trained-qwen2.5-vl"  # the name the tables show
# scripts/make_classifier_data.py --out JUDGE_DATA --sampled --train-only --trials 40 --variants near_miss
JUDGE_DATA = Path(__file__).resolve().parent / "data"
DATA: tuple[Path, ...] = (DEFAULT_DATA_DIR, JUDGE_DATA)
STAMP_FILE = "recipe-stamp"
FAMILY = "qwen2_5_vl"
SIZE = "tiny"
REQUEST: Mapping[str, Any] = {"nframes": 16, "max_pixels": 19600}
# The engine that serves it in the learning comparison: vLLM, the mission's engine. Its verdicts
# equal qwen_vl_hf's (benchmark 21) now that both place the video's frames alike in time
# (vlm_reward/backends/video_positions.py).
BACKEND = "qwen_vl_vllm"
FINETUNE_OPTIONS: tuple[str, ...] = (
    "--counterfactuals",
    "reversed,frozen,clipped,shuffled,wrong_task",
    "--wrong-instructions",
    "4",
    "--lr",
    "1e-4",
    "--lr-schedule",
    "cosine",
    "--epochs",
    "40",
    "--seed",
    "0",
)
MAKE_TIMEOUT_S = 3 * 3600


def with_seed(seed: int | None) -> tuple[str, ...]:
    """:data:`FINETUNE_OPTIONS` with its ``--seed`` set to ``seed`` (``None``: as they are)."""
    if seed is None:
        return FINETUNE_OPTIONS
    at = FINETUNE_OPTIONS.index("--seed") + 1
    return (*FINETUNE_OPTIONS[:at], str(seed), *FINETUNE_OPTIONS[at + 1 :])


def stamp(data: Sequence[Path] = DATA, options: Sequence[str] | None = None) -> str:
    """The hash of everything a judge was made from (see the module docstring); ``options``: the
    fine-tune's, the recipe's unless another seed made it."""
    from vlm_reward.backends.video_positions import LAYOUT
    from vlm_reward.tools.checkpoint_size import checkpoint_size
    from vlm_reward.tools.tiny_checkpoint import size_stamp

    digest = hashlib.sha256()
    for root in data:
        digest.update((root / MANIFEST).read_bytes())
    recipe = {
        "size": size_stamp(FAMILY, checkpoint_size(SIZE)),
        "options": list(FINETUNE_OPTIONS if options is None else options),
        "request": dict(REQUEST),
        "positions": LAYOUT,
    }
    digest.update(json.dumps(recipe, sort_keys=True).encode("utf-8"))
    return digest.hexdigest()


def shipped_stamp(checkpoint: Path = CHECKPOINT) -> str | None:
    """The stamp the shipped judge carries, ``None`` without one."""
    path = checkpoint / STAMP_FILE
    return path.read_text(encoding="utf-8").strip() if path.is_file() else None


def env_config(out: Path, base: Path = ENV_CONFIG) -> Path:
    """``base`` (the mission's env YAML, composed) with :data:`REQUEST` in its ``reward_model``
    block, written to ``out``: the YAML the judge is trained with and served with."""
    from omegaconf import OmegaConf

    from reward_eval.job.env_config import load_env_config

    cfg = load_env_config(base)
    for key, value in REQUEST.items():
        cfg.reward_model[key] = value
    out.parent.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(cfg, out)
    return out


def finetune_command(
    base: Path,
    out: Path,
    config: Path,
    data: Sequence[Path] = DATA,
    options: Sequence[str] | None = None,
) -> list[str]:
    """The fine-tune that makes the judge from the base checkpoint ``base`` into ``out`` (with
    ``options``, the recipe's :data:`FINETUNE_OPTIONS` by default)."""
    return [
        sys.executable,
        "-m",
        "reward_eval",
        "finetune",
        *(arg for root in data for arg in ("--data", str(root))),
        "--model",
        str(base),
        "--out",
        str(out),
        "--overwrite",
        "--env-config",
        str(config),
        *(FINETUNE_OPTIONS if options is None else options),
    ]


def make(checkpoint: Path = CHECKPOINT, seed: int | None = None) -> int:
    """Build the base, fine-tune it (at training seed ``seed``, the recipe's by default), and replace
    ``checkpoint`` with the result and its stamp; the fine-tune's exit status (``checkpoint`` is left
    as it was unless it is 0). The base is the same at every training seed."""
    options = with_seed(seed)
    from vlm_reward.tools.tiny_checkpoint import build_tiny_checkpoint

    with tempfile.TemporaryDirectory(prefix="trained-judge-") as tmp:
        work = Path(tmp)
        base = build_tiny_checkpoint(work / "base", FAMILY, SIZE)
        config = env_config(work / "judge_env.yaml")
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        command = finetune_command(base, work / "judge", config, options=options)
        status = subprocess.run(command, env=env, timeout=MAKE_TIMEOUT_S, check=False).returncode
        if status != 0:
            return status
        install(work / "judge", checkpoint, options)
    return 0


def install(judge: Path, checkpoint: Path, options: Sequence[str] | None = None) -> None:
    """Copy the fine-tuned judge's files (the model, the processor, ``finetune.json``; not its report,
    videos or training checkpoints, which are folders) into ``checkpoint``, emptied first, and write
    its stamp (of ``options``, the fine-tune's)."""
    if checkpoint.exists():
        shutil.rmtree(checkpoint)
    checkpoint.mkdir(parents=True)
    for path in judge.iterdir():
        if path.is_file():
            shutil.copy2(path, checkpoint / path.name)
    (checkpoint / STAMP_FILE).write_text(stamp(options=options) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    made = sub.add_parser("make", help="make the judge into the shipped checkpoint dir")
    made.add_argument("--seed", type=int, help="another training seed (needs --out: not the shipped judge)")
    made.add_argument("--out", type=Path, help="where the judge goes (default: the shipped checkpoint dir)")
    sub.add_parser("check", help="exit 1 if the shipped judge's stamp is not the current recipe's")
    env = sub.add_parser("env-config", help="write the env YAML the judge is served with")
    env.add_argument("out", type=Path)
    args = p.parse_args(argv)
    if args.command == "make":
        if args.seed is not None and args.out is None:
            p.error("make --seed makes a judge other than the shipped one: give --out DIR too.")
        return make(args.out or CHECKPOINT, args.seed)
    if args.command == "env-config":
        print(env_config(args.out))
        return 0
    current, shipped = stamp(), shipped_stamp()
    if current != shipped:
        print(
            f"[trained-judge] {CHECKPOINT} is stale (stamp {shipped}, recipe {current}); run make.",
            file=sys.stderr,
        )
        return 1
    print(f"[trained-judge] {CHECKPOINT} is the recipe's ({current[:16]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
