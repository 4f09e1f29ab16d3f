#!/usr/bin/env bash
# Evaluate a VLM reward model against LIBERO's native success (docs/evaluate/index.md).
#
#   bash examples/embodiment/scripts/evaluate_reward_model.sh run [options]       roll out, score, report
#   bash examples/embodiment/scripts/evaluate_reward_model.sh rescore RUN_DIR [options]    another judge
#   bash examples/embodiment/scripts/evaluate_reward_model.sh report RUN_DIR --threshold T  no judge call
#   bash examples/embodiment/scripts/evaluate_reward_model.sh audit RUN_DIR [options]      counterfactuals
#   bash examples/embodiment/scripts/evaluate_reward_model.sh compare NATIVE_LOG_DIR VLM_LOG_DIR [options]
#   bash examples/embodiment/scripts/evaluate_reward_model.sh finetune RUN_DIR... --model BASE --out DIR  train a judge
#
# Works from any directory: puts the repo root first on PYTHONPATH and uses .venv/bin/python
# when it exists (override with PYTHON). Every argument goes to the command; each has --help.
set -euo pipefail
REPO_PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$REPO_PATH/.venv/bin/python" ]; then PYTHON="$REPO_PATH/.venv/bin/python"; else PYTHON=python; fi
fi
export PYTHONPATH="$REPO_PATH${PYTHONPATH:+:$PYTHONPATH}"
exec "$PYTHON" -m reward_eval "$@"
