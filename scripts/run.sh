#!/usr/bin/env bash
# Set up (idempotent) and run the main job: the reward-model evaluation on a small embedded
# default (2 LIBERO-10 tasks x 2 episodes of 24 steps, random policy, judged by qwen2_5_vl_hf on
# the tiny offline checkpoint). Extra arguments go to the job and override these defaults,
# e.g. `bash scripts/run.sh --model /path/to/Qwen2.5-VL-7B-Instruct` or `--endpoint URL`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
cd "$ROOT"
exec "${VENV:-$ROOT/.venv}/bin/python" -m examples.embodiment.reward_eval run \
  --tasks 0,1 --episodes-per-task 2 --max-episode-steps 24 --policy random "$@"
