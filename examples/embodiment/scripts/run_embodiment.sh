#!/usr/bin/env bash
# Train with RLinf 0.3 using this fork's LiberoEnv.
#
#   bash examples/embodiment/scripts/run_embodiment.sh [--dry-run] [CONFIG] [hydra overrides...]
#
# CONFIG defaults to libero_10_grpo_openvlaoft. Examples:
#   bash examples/embodiment/scripts/run_embodiment.sh libero_10_grpo_openvlaoft
#   bash examples/embodiment/scripts/run_embodiment.sh libero_10_grpo_openvlaoft env.train.reward_model.enable=True
#   bash examples/embodiment/scripts/run_embodiment.sh --dry-run libero_10_grpo_openvlaoft env.train.reward_model.enable=True
#
# --dry-run validates the config, checks the reward server and runs one env reset and chunk step
# on this machine (no GPU needed), then exits. Logs go to logs/<timestamp>-<config>/.
# Environment: PYTHON (default: the repo's .venv python if present, else python), LOG_ROOT.
set -euo pipefail

EMBODIED_PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO_PATH="$(cd "$EMBODIED_PATH/../.." && pwd)"
export EMBODIED_PATH REPO_PATH

ENTRY="$EMBODIED_PATH/train_embodied_agent.py"
if [ "${1:-}" = "--dry-run" ]; then
  ENTRY="$EMBODIED_PATH/dry_run.py"
  shift
fi
CONFIG_NAME="libero_10_grpo_openvlaoft"
if [ $# -gt 0 ] && [[ "$1" != *=* ]]; then
  CONFIG_NAME="$1"
  shift
fi

if [ -z "${PYTHON:-}" ]; then
  if [ -x "$REPO_PATH/.venv/bin/python" ]; then PYTHON="$REPO_PATH/.venv/bin/python"; else PYTHON=python; fi
fi

# The repo root goes first so `rlinf.envs.libero.libero_env` is this fork's (see README).
export PYTHONPATH="$REPO_PATH${PYTHONPATH:+:$PYTHONPATH}"
export MUJOCO_GL="${MUJOCO_GL:-egl}"
export PYOPENGL_PLATFORM="${PYOPENGL_PLATFORM:-egl}"
export ROBOT_PLATFORM="${ROBOT_PLATFORM:-LIBERO}"
export LIBERO_TYPE="${LIBERO_TYPE:-standard}"
# scripts/setup.sh writes LIBERO's config next to the venv; without one, libero prompts.
if [ -z "${LIBERO_CONFIG_PATH:-}" ] && [ -f "$REPO_PATH/.venv/libero-config/config.yaml" ]; then
  export LIBERO_CONFIG_PATH="$REPO_PATH/.venv/libero-config"
fi

LOG_DIR="${LOG_ROOT:-$REPO_PATH/logs}/$(date +'%Y%m%d-%H%M%S')-${CONFIG_NAME}"
mkdir -p "$LOG_DIR"
LOG_FILE="$LOG_DIR/run_embodiment.log"
CMD=("$PYTHON" "$ENTRY" --config-path "$EMBODIED_PATH/config" --config-name "$CONFIG_NAME"
  "runner.logger.log_path=$LOG_DIR" "$@")
echo "[run_embodiment] log dir: $LOG_DIR"
printf '%q ' "${CMD[@]}" > "$LOG_FILE"
echo >> "$LOG_FILE"
"${CMD[@]}" 2>&1 | tee -a "$LOG_FILE"
