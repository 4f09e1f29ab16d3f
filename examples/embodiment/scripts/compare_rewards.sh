#!/usr/bin/env bash
# The learning comparison: train the --cpu-learn policy once per reward setting and compare the runs.
#
#   bash examples/embodiment/scripts/compare_rewards.sh --out DIR [--seed S] [--steps N]
#       [--runs native,classifier,tiny_vlm,lenient] [--start rare] [--judge-only] [--reuse-stale]
#       [--override KEY=VALUE ...]
#
# Runs one after another (resumable: a finished run is not rerun if it was made as it would be now),
# a line per GRPO step, each judge started before its run and stopped after it; then `reward-eval
# compare` over the runs (DIR/compare.png, DIR/compare.md with the statistics) and DIR/learning.json.
# Several seeds' DIRs pool with `python -m examples.embodiment.reward_comparison.seeds DIR... --out OUT`.
# examples/embodiment/reward_comparison/cli.py, docs/training/learning.md.
# Environment: PYTHON (default: the repo's .venv python if present, else python), CPU_LEARN_TIMEOUT (per
# run; default: grows with --steps).
set -euo pipefail
REPO_PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$REPO_PATH/.venv/bin/python" ]; then PYTHON="$REPO_PATH/.venv/bin/python"; else PYTHON=python; fi
fi
export PYTHONPATH="$REPO_PATH${PYTHONPATH:+:$PYTHONPATH}"
if [ -z "${LIBERO_CONFIG_PATH:-}" ] && [ -f "$REPO_PATH/.venv/libero-config/config.yaml" ]; then
  export LIBERO_CONFIG_PATH="$REPO_PATH/.venv/libero-config"
fi
cd "$REPO_PATH"
exec "$PYTHON" -m examples.embodiment.reward_comparison.cli "$@"
