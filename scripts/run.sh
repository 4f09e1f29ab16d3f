#!/usr/bin/env bash
# Set up (idempotent) and run the main job. Extra arguments go to the job.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
cd "$ROOT"
exec "${VENV:-$ROOT/.venv}/bin/python" -m examples.embodiment.vlm_reward_demo "$@"
