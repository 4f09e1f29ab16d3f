#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite plus ruff, then say where the time went.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not libero and not slow"`.
# Set-up's main part (apt, .venv, the project) runs first; the vLLM venv's install and the
# classifier's training, which only some tests need, run beside the tests: those tests wait for
# them (tests/support/setup_steps.py), and the command fails if either failed.
# The suite runs in two processes side by side (tests/conftest.py, --part): the heavy tests
# (LIBERO, vLLM, training; one at a time, as the machine's memory needs) here, the light ones
# beside them, their output printed once they end. TEST_PARTS=1 runs everything in one process.
# The last lines are the slowest tests and each part's time (tests/support/suite_times.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
STARTED=$SECONDS
# shellcheck source=/dev/null  # checked on its own
source scripts/openmp.sh  # two parts side by side: idle OpenMP threads must not spin

# Each part its own temp root: pytest prunes old numbered temp dirs, never another live part's.
TMP_ROOT="$(mktemp -d)"
BACKGROUND=()
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  local pid
  for pid in "${BACKGROUND[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
  rm -rf "$TMP_ROOT"
}
trap cleanup EXIT

SETUP_PART=main bash scripts/setup.sh
export SETUP_STEPS_DIR="$TMP_ROOT/setup"
STEPS=(vllm_venv classifier)
mkdir -p "$SETUP_STEPS_DIR"
set -m  # each step in a process group of its own: cleanup stops it whole
for step in "${STEPS[@]}"; do
  (
    status=0
    SETUP_PART="$step" bash scripts/setup.sh > "$SETUP_STEPS_DIR/$step.log" 2>&1 || status=$?
    echo "$status" > "$SETUP_STEPS_DIR/$step.status.tmp"
    mv "$SETUP_STEPS_DIR/$step.status.tmp" "$SETUP_STEPS_DIR/$step.status"
  ) &
  BACKGROUND+=("$!")
done
set +m
echo "[test] set-up's ${STEPS[*]} run beside the tests (the tests that need them wait; logs in $SETUP_STEPS_DIR)"

# The background steps' outcome, once they end: 0, or 1 after each failed step's log.
finish_setup() {
  local pid step status failed=0
  for pid in "${BACKGROUND[@]}"; do wait "$pid" || true; done
  BACKGROUND=()
  for step in "${STEPS[@]}"; do
    status="$(cat "$SETUP_STEPS_DIR/$step.status" 2>/dev/null || echo none)"
    if [ "$status" = 0 ]; then
      echo "[test] set-up's $step: done ($(grep '^\[setup\]' "$SETUP_STEPS_DIR/$step.log" | tail -n 1))"
    else
      echo "[test] set-up's $step FAILED (exit status $status); its log:"
      cat "$SETUP_STEPS_DIR/$step.log"
      failed=1
    fi
  done
  return "$failed"
}

VENV="${VENV:-$ROOT/.venv}"
echo "[test] ruff"
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .
echo "[test] pytest"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
PYTEST=("$VENV/bin/python" -m pytest)
TIMES=("$VENV/bin/python" -m tests.support.suite_times)

if [ "${TEST_PARTS:-2}" = 1 ]; then
  status=0
  "${PYTEST[@]}" --times-json "$TMP_ROOT/all.json" "$@" || status=$?
  finish_setup || { [ "$status" -ne 0 ] || status=1; }
  "${TIMES[@]}" "$TMP_ROOT/all.json"
  echo "[test] done in $((SECONDS - STARTED)) s, set-up included"
  exit "$status"
fi

mkdir -p "$TMP_ROOT/heavy" "$TMP_ROOT/light"
PYTEST_DEBUG_TEMPROOT="$TMP_ROOT/light" "${PYTEST[@]}" --part light --times-json "$TMP_ROOT/light.json" "$@" \
  > "$TMP_ROOT/light.log" 2>&1 &
light_pid=$!
heavy=0
PYTEST_DEBUG_TEMPROOT="$TMP_ROOT/heavy" "${PYTEST[@]}" --part heavy --times-json "$TMP_ROOT/heavy.json" "$@" \
  || heavy=$?
light=0
wait "$light_pid" || light=$?
echo "[test] the light part (ran beside the heavy one):"
cat "$TMP_ROOT/light.log"
setup=0
finish_setup || setup=1
echo "[test] heavy part: exit status $heavy; light part: exit status $light; set-up's background steps: $setup"
"${TIMES[@]}" "$TMP_ROOT/heavy.json" "$TMP_ROOT/light.json"
echo "[test] done in $((SECONDS - STARTED)) s, set-up included"
# 5 is pytest's "no tests collected": fine for one part when the other ran tests.
if [ "$heavy" -eq 5 ] && [ "$light" -ne 5 ]; then heavy=0; fi
if [ "$light" -eq 5 ] && [ "$heavy" -ne 5 ]; then light=0; fi
if [ "$heavy" -ne 0 ]; then exit "$heavy"; fi
if [ "$light" -ne 0 ]; then exit "$light"; fi
if [ "$setup" -ne 0 ]; then exit 1; fi
