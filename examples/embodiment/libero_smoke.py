"""Smoke run of the project's LiberoEnv: one reset and one idle episode, printed step by step.

Run it through ``bash scripts/run.sh`` (which sets up the venv and PYTHONPATH), or directly:
``PYTHONPATH=. .venv/bin/python -m examples.embodiment.libero_smoke --num-envs 2 --max-steps 16``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

ENV_CONFIG = Path(__file__).resolve().parent / "config" / "env" / "libero_10.yaml"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=2, help="parallel LIBERO env processes")
    parser.add_argument("--max-steps", type=int, default=16, help="max_episode_steps (truncation)")
    parser.add_argument("--chunk", type=int, default=8, help="actions per chunk_step")
    args = parser.parse_args(argv)
    for name in ("num_envs", "max_steps", "chunk"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}.")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from rlinf.envs import get_env_cls

    cfg = OmegaConf.load(ENV_CONFIG)
    cfg.max_episode_steps = args.max_steps
    env_cls = get_env_cls("libero")
    print(f"env class: {env_cls.__module__}.{env_cls.__qualname__} (suite {cfg.task_suite_name})")
    started = time.perf_counter()
    env = env_cls(cfg, num_envs=args.num_envs, seed_offset=0, total_num_processes=1, worker_info=None)
    try:
        obs, _ = env.reset()
        print(f"reset {args.num_envs} envs in {time.perf_counter() - started:.1f} s")
        for i, task in enumerate(obs["task_descriptions"]):
            print(f"  env {i}: {task!r}, main image {tuple(obs['main_images'][i].shape)}")
        actions = np.zeros((args.num_envs, args.chunk, 7), dtype=np.float32)
        actions[..., -1] = -1.0  # gripper open, arm still
        steps = 0
        while steps < args.max_steps:
            t0 = time.perf_counter()
            _, rewards, terms, truncs, _ = env.chunk_step(actions)
            steps += args.chunk
            print(
                f"chunk_step -> step {steps:3d}: {time.perf_counter() - t0:.2f} s, "
                f"reward sum {float(rewards.sum()):.1f}, terminated {bool(terms.any())}, "
                f"truncated {bool(truncs.any())}"
            )
            if truncs.any() or terms.any():
                break
    finally:
        env.env.close()
    print(f"done in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
