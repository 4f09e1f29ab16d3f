#!/usr/bin/env bash
# Set up (idempotent) and run the main job: the reward-model evaluation on a small embedded
# default (2 LIBERO-10 basket tasks x 2 episodes played by the scripted expert, which drops the
# last object in about half the episodes -- with policy seed 3, the second episode of each task --
# judged by qwen_vl_hf on the tiny offline checkpoint), then the same episodes judged again by the
# ResNet success classifier that set-up trained on simulator labels (rescore --backend resnet),
# audited, then by the VLM judge trained here on simulator labels (reward_eval/trained_judge), audited,
# and the three side by side: a VLM that judges at random, a classifier that separates the successes
# but cannot read the instruction, and a VLM trained to do both. Extra arguments go to the first
# judge's run and override its defaults, e.g.
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
# the VLM judge trained here on simulator labels (reward_eval/trained_judge: shipped, stamped), served
# at the request it was trained with (16 frames at 140x140) by the same qwen_vl_hf backend as the first
TRAINED="$("$PY" -c 'from reward_eval.trained_judge.recipe import CHECKPOINT; print(CHECKPOINT)')"
echo "[run.sh] the same episodes judged by the VLM judge trained here on simulator labels ($TRAINED)"
"$PY" -m reward_eval.trained_judge.recipe env-config "$OUT/trained_judge_env.yaml" >/dev/null
"$PY" -m reward_eval rescore "$OUT" --backend qwen_vl_hf --model "$TRAINED" \
  --env-config "$OUT/trained_judge_env.yaml" --out "$OUT/trained_vlm"
"$PY" -m reward_eval audit "$OUT/trained_vlm" --backend qwen_vl_hf --model "$TRAINED" \
  --env-config "$OUT/trained_judge_env.yaml"
echo "[run.sh] the three judges of the same episodes:"
exec "$PY" -m reward_eval.report.side_by_side "$OUT" "$OUT/classifier" "$OUT/trained_vlm"
