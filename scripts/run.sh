#!/usr/bin/env bash
# Set up (idempotent) and run the main job: the reward-model evaluation on a small embedded
# default (2 LIBERO-10 basket tasks x 2 episodes played by the scripted expert, which drops the
# last object in about half the episodes -- with policy seed 3, the second episode of each task --
# judged by qwen_vl_hf on the tiny offline checkpoint). Extra arguments go to the job and override these defaults, e.g.
# `bash scripts/run.sh --model /path/to/Qwen2.5-VL-7B-Instruct` or `--endpoint URL`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
cd "$ROOT"
exec "${VENV:-$ROOT/.venv}/bin/python" -m reward_eval run \
  --tasks 0,1 --episodes-per-task 2 --max-episode-steps 400 \
  --policy expert --policy-kwargs '{"drop": "carry", "drop_prob": 0.5}' --policy-seed 3 "$@"
