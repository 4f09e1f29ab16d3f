"""Demo of the whole VLM reward path on this machine, no GPU and no downloads needed.

1. builds the tiny random-weight Qwen2.5-VL checkpoint (offline, ~1.5 MB) unless ``--model``;
2. starts the reward server (``qwen2_5_vl_hf`` backend) on 127.0.0.1 and waits for /health;
3. rolls out LIBERO-10 episodes through the project's ``LiberoEnv`` with
   ``reward_model.enable=True`` (idle policy: the arm holds still, so no native success);
4. prints one line per episode (native outcome, VLM score, answer or error, latency) and
   where the JSONL episode log is, then stops the server.

With the tiny model the VLM's answers are random bytes, so expect parse errors and the
fallback score: the point is that every stage runs. Pass ``--model /path/to/Qwen2.5-VL-7B-Instruct``
for real judgements (slow on CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import requests
from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[2]
ENV_CONFIG = REPO / "examples" / "embodiment" / "config" / "env" / "libero_10.yaml"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Score LIBERO episodes with a VLM reward server.")
    parser.add_argument("--model", help="Qwen2.5-VL checkpoint dir (default: build the tiny random one)")
    parser.add_argument("--num-envs", type=int, default=2, help="parallel LIBERO envs (= episodes)")
    parser.add_argument("--max-steps", type=int, default=16, help="max_episode_steps")
    parser.add_argument("--chunk", type=int, default=8, help="actions per chunk_step")
    parser.add_argument("--port", type=int, default=18080, help="reward server port on 127.0.0.1")
    parser.add_argument("--out", default=str(REPO / "runs" / "demo"), help="output dir (episode log)")
    args = parser.parse_args(argv)
    for name in ("num_envs", "max_steps", "chunk"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}.")
    return args


def start_server(model: str, port: int, log_path: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "vlm_reward.libero_reward_server", "--backend", "qwen2_5_vl_hf"]
    cmd += ["--model", model, "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=log)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"reward server exited with {proc.returncode}; see {log_path}")
        try:
            if requests.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return proc
        except requests.ConnectionError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"reward server not healthy after 300 s; see {log_path}")


def rollout(args: argparse.Namespace, endpoint: str, out: Path) -> Path:
    from rlinf.envs import get_env_cls

    cfg = OmegaConf.load(ENV_CONFIG)
    cfg.max_episode_steps = args.max_steps
    cfg.reward_model.update(
        enable=True, endpoint=endpoint, backend="qwen2_5_vl_hf", episode_log_dir=str(out), timeout=300
    )
    env = get_env_cls("libero")(
        cfg, num_envs=args.num_envs, seed_offset=0, total_num_processes=1, worker_info=None
    )
    try:
        started = time.perf_counter()
        env.reset()
        print(f"[demo] reset {args.num_envs} LIBERO envs in {time.perf_counter() - started:.1f} s")
        actions = np.zeros((args.num_envs, args.chunk, 7), dtype=np.float32)
        actions[..., -1] = -1.0  # idle policy: arm still, gripper open
        for step in range(args.chunk, args.max_steps + args.chunk, args.chunk):
            _, rewards, _, truncations, _ = env.chunk_step(actions)
            done = min(step, args.max_steps)
            print(f"[demo] chunk_step -> step {done:3d}, reward sum {float(rewards.sum()):.2f}")
            if truncations.any():
                break
    finally:
        env.close()
        env.env.close()
    return next(out.glob("vlm_episodes_*.jsonl"))


def print_table(log_path: Path) -> None:
    print(f"\n{'env':>3}  {'native':>6}  {'vlm':>5}  {'latency':>7}  task / VLM outcome")
    for line in log_path.read_text().splitlines()[-50:]:
        rec = json.loads(line)
        if rec["fallback"]:
            outcome = f"fallback score ({rec['error_kind']}; full reason in the episode log)"
        else:
            outcome = f"answer {rec['vlm_answer']!r}"
        native, score, latency = rec["native_success"], rec["vlm_score"], rec["latency_s"]
        row = f"{rec['env']:>3}  {native!s:>6}  {score:5.2f}  {latency:6.2f}s"
        print(f"{row}  {rec['task_text']}\n{'':>27}{outcome}")
    print(f"\nepisode log: {log_path}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    out = Path(args.out) / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    model = args.model
    if model is None:
        from vlm_reward.tiny_checkpoint import build_tiny_qwen2_5_vl

        model = str(build_tiny_qwen2_5_vl(Path(tempfile.gettempdir()) / "tiny-qwen2.5-vl"))
        print(f"[demo] built the tiny random-weight Qwen2.5-VL at {model} (its scores are random)")
    server = start_server(model, args.port, out / "reward_server.log")
    print(f"[demo] reward server ready on http://127.0.0.1:{args.port} (log: {out / 'reward_server.log'})")
    try:
        log_path = rollout(args, f"http://127.0.0.1:{args.port}/score", out)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print_table(log_path)


if __name__ == "__main__":
    main()
