#!/usr/bin/env bash
# Train with RLinf 0.3 using this fork's LiberoEnv.
#
#   bash examples/embodiment/scripts/run_embodiment.sh [--dry-run | --cpu-smoke | --cpu-learn] [CONFIG] [hydra overrides...]
#
# CONFIG defaults to libero_10_grpo_openvlaoft. Examples:
#   bash examples/embodiment/scripts/run_embodiment.sh libero_10_grpo_openvlaoft
#   bash examples/embodiment/scripts/run_embodiment.sh libero_10_grpo_openvlaoft env.train.reward_model.enable=True
#   bash examples/embodiment/scripts/run_embodiment.sh --dry-run libero_10_grpo_openvlaoft env.train.reward_model.enable=True
#   bash examples/embodiment/scripts/run_embodiment.sh --cpu-smoke libero_10_grpo_openvlaoft env.train.reward_model.enable=True
#
# --dry-run validates the config, checks the reward server and runs one env reset and chunk step
# on this machine (no GPU needed), then exits.
# --cpu-smoke runs the real training entry on CPU for 1 GRPO step of a tiny setup (a tiny random-weight
# OpenVLA-OFT built into the log dir unless actor.model.model_path names a checkpoint, 2 envs, one
# 8-step action chunk per episode; config/cpu_smoke/tiny.yaml, the CPU platform hook
# examples/embodiment/cpu_smoke/cpu_platform.py) on a private Ray cluster, with a hard timeout. It checks the
# wiring before GPUs are booked; it does not train a useful policy.
# --cpu-learn runs the same entry on CPU with a policy that learns within a few GRPO steps (the scripted
# expert with learnable release points, 16 envs without cameras, 5 steps; config/cpu_learn/expert.yaml,
# the hook examples/embodiment/cpu_learn/hook.py), supervised like --cpu-smoke (docs/training/learning.md).
# Logs go to logs/<timestamp>-<config>/.
# With reward_server.enable=True (and a cluster.component_placement.reward_server entry) the run starts
# its judges on its own Ray cluster and stops them at the end; --dry-run prints and checks their plan
# (docs/server/scaling.md, "Judges on the training's Ray cluster").
#
# Ray: RLinf joins a Ray cluster already running on this machine if there is one (ray.init
# address="auto"), else starts its own; the run prints which. RAY_ADDRESS=HOST:PORT joins that
# cluster, RAY_ADDRESS=local forces a private one (--cpu-smoke always uses a private one).
# Environment: PYTHON (default: the repo's .venv python if present, else python), LOG_ROOT,
# RAY_ADDRESS, CPU_SMOKE_TIMEOUT (seconds, default 600), CPU_LEARN_TIMEOUT (default 3600), RLINF_EXT_MODULE
# (--cpu-smoke: default examples.embodiment.cpu_smoke.cpu_platform, --cpu-learn:
# examples.embodiment.cpu_learn.hook; a module of your own must call its register()).
set -euo pipefail

EMBODIED_PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO_PATH="$(cd "$EMBODIED_PATH/../.." && pwd)"
export EMBODIED_PATH REPO_PATH

ENTRY="$EMBODIED_PATH/train_embodied_agent.py"
MODE=train
case "${1:-}" in
  --dry-run) ENTRY="$EMBODIED_PATH/dry_run.py"; MODE=dry-run; shift ;;
  --cpu-smoke) MODE=cpu-smoke; shift ;;
  --cpu-learn) MODE=cpu-learn; shift ;;
esac
CONFIG_NAME="libero_10_grpo_openvlaoft"
if [ $# -gt 0 ] && [[ "$1" != *=* ]]; then
  CONFIG_NAME="$1"
  shift
fi

if [ -z "${PYTHON:-}" ]; then
  if [ -x "$REPO_PATH/.venv/bin/python" ]; then PYTHON="$REPO_PATH/.venv/bin/python"; else PYTHON=python; fi
fi

# The repo root goes first so `rlinf.envs.libero.libero_env` is this fork's (see docs/env/overlay.md).
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
  "runner.logger.log_path=$LOG_DIR")
TIMEOUT=()

if [ "$MODE" = cpu-smoke ] || [ "$MODE" = cpu-learn ]; then
  if [ "$MODE" = cpu-smoke ]; then
    CPU_TIMEOUT="${CPU_SMOKE_TIMEOUT:-600}"; TIMEOUT_VAR=CPU_SMOKE_TIMEOUT
    GROUP="+cpu_smoke=tiny"; HOOK=examples.embodiment.cpu_smoke.cpu_platform
    BANNER="a wiring check on CPU (tiny OpenVLA-OFT, 2 envs, 8-step episodes, 1 GRPO step), not training: the policy learns nothing useful."
  else
    CPU_TIMEOUT="${CPU_LEARN_TIMEOUT:-3600}"; TIMEOUT_VAR=CPU_LEARN_TIMEOUT
    GROUP="+cpu_learn=expert"; HOOK=examples.embodiment.cpu_learn.hook
    BANNER="GRPO on CPU with the scripted expert's learnable release points (16 envs, 400-step episodes, 5 steps by default)."
  fi
  if ! [[ "$CPU_TIMEOUT" =~ ^[1-9][0-9]*$ ]]; then
    echo "[run_embodiment] $TIMEOUT_VAR must be a whole number of seconds > 0, got '$CPU_TIMEOUT'." >&2
    exit 2
  fi
  if [ -n "${RAY_ADDRESS:-}" ] && [ "$RAY_ADDRESS" != local ]; then
    echo "[run_embodiment] --$MODE ignores RAY_ADDRESS=$RAY_ADDRESS: it always starts a private Ray cluster."
  fi
  export RAY_ADDRESS=local
  export RLINF_EXT_MODULE="${RLINF_EXT_MODULE:-$HOOK}"
  echo "[run_embodiment] --$MODE: $BANNER Timeout ${CPU_TIMEOUT} s."
  # The driver enforces the timeout itself (and says why); coreutils' timeout is the backstop.
  CMD+=("$GROUP" "cpu_smoke.timeout_s=$CPU_TIMEOUT")
  # --foreground: Ctrl-C still reaches the driver (Ray's reaper stops the cluster when it exits).
  TIMEOUT=(timeout --foreground --kill-after=30 "$((CPU_TIMEOUT + 60))")
elif [ "$MODE" = train ]; then
  if [ -n "${RAY_ADDRESS:-}" ]; then
    echo "[run_embodiment] Ray: RAY_ADDRESS=$RAY_ADDRESS ('local': a private cluster for this run)."
  else
    echo "[run_embodiment] Ray: joins a cluster already running on this machine if any, else starts one" \
      "(RAY_ADDRESS=local forces a private one, RAY_ADDRESS=HOST:PORT picks one)."
  fi
fi
CMD+=("$@")

echo "[run_embodiment] log dir: $LOG_DIR"
printf '%q ' "${CMD[@]}" > "$LOG_FILE"
echo >> "$LOG_FILE"
status=0
"${TIMEOUT[@]}" "${CMD[@]}" 2>&1 | tee -a "$LOG_FILE" || status=$?
# 4: env.train.reward_model.guard (action stop) ended the run after its checkpoint, on purpose
# (vlm_reward.exit_statuses.EXIT_GUARD_STOP; the statuses are registered there and tested against this
# script).
if [ "$status" -eq 4 ]; then
  echo "[run_embodiment] the reward guard stopped the run (exit status 4); see [reward guard] above." | tee -a "$LOG_FILE" >&2
elif [[ "$MODE" == cpu-* ]] && [ "$status" -ne 0 ]; then
  reason="exit status $status"
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then reason="timed out"; fi
  echo "[run_embodiment] --$MODE FAILED ($reason); the first error is in $LOG_FILE" | tee -a "$LOG_FILE" >&2
fi
exit "$status"
