#!/usr/bin/env bash
# Set up (idempotent) and run the main job: the reward-model evaluation on a small embedded
# default (2 LIBERO-10 basket tasks x 2 episodes played by the scripted expert, which drops the
# last object in about half the episodes -- with policy seed 3, the second episode of each task --
# judged by qwen_vl_hf on the tiny offline checkpoint), then the same episodes judged again by the
# ResNet success classifier that set-up trained on simulator labels (rescore --backend resnet),
# audited, and both judges side by side: one that judges at random, one that separates the
# successes. Extra arguments go to the first judge's run and override its defaults, e.g.
# `bash scripts/run.sh --model /path/to/Qwen2.5-VL-7B-Instruct` or `--endpoint URL`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=/dev/null  # checked on its own
source "$ROOT/scripts/openmp.sh"  # the judge beside LIBERO: idle OpenMP threads must not spin
bash "$ROOT/scripts/setup.sh"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
cd "$ROOT"
PY="${VENV:-$ROOT/.venv}/bin/python"
OUT="$ROOT/runs/reward_eval/main-$(date +%Y%m%d-%H%M%S)"
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do  # an --out of the caller's names the run dir
  case "${args[i]}" in
    --out) OUT="${args[i + 1]}" ;;
    --out=*) OUT="${args[i]#--out=}" ;;
  esac
done
CLASSIFIER="$("$PY" -c 'from reward_eval.classifier.setup_checkpoint import CHECKPOINT; print(CHECKPOINT)')"
# the main job's episodes, one definition (reward_eval/job/main_job.py): tasks, trials, step limit, policy
MAIN_JOB_ARGS="$("$PY" -m reward_eval.job.main_job)"  # one argument a line; set -e stops on a failure
readarray -t MAIN_JOB <<<"$MAIN_JOB_ARGS"
"$PY" -m reward_eval run --out "$OUT" "${MAIN_JOB[@]}" "$@"
echo "[run.sh] the same episodes judged by the classifier set-up trained on simulator labels ($CLASSIFIER)"
"$PY" -m reward_eval rescore "$OUT" --backend resnet --model "$CLASSIFIER" --out "$OUT/classifier"
"$PY" -m reward_eval audit "$OUT/classifier" --backend resnet --model "$CLASSIFIER"
echo "[run.sh] both judges of the same episodes:"
exec "$PY" -m reward_eval.report.side_by_side "$OUT" "$OUT/classifier"
