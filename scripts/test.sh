#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite plus ruff.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not libero and not slow"`.
# The suite runs in two processes side by side (tests/conftest.py, --part): the heavy tests
# (LIBERO, vLLM, training; one at a time, as the machine's memory needs) here, the light ones
# beside them, their output printed once they end. TEST_PARTS=1 runs everything in one process.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=/dev/null  # checked on its own
source scripts/openmp.sh  # two parts side by side: idle OpenMP threads must not spin
bash scripts/setup.sh
VENV="${VENV:-$ROOT/.venv}"
echo "[test] ruff"
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .
echo "[test] pytest"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
PYTEST=("$VENV/bin/python" -m pytest)
if [ "${TEST_PARTS:-2}" = 1 ]; then
  exec "${PYTEST[@]}" "$@"
fi

# Each part its own temp root: pytest prunes old numbered temp dirs, never another live part's.
TMP_ROOT="$(mktemp -d)"
trap 'rm -rf "$TMP_ROOT"' EXIT
mkdir -p "$TMP_ROOT/heavy" "$TMP_ROOT/light"
PYTEST_DEBUG_TEMPROOT="$TMP_ROOT/light" "${PYTEST[@]}" --part light "$@" \
  > "$TMP_ROOT/light.log" 2>&1 &
light_pid=$!
heavy=0
PYTEST_DEBUG_TEMPROOT="$TMP_ROOT/heavy" "${PYTEST[@]}" --part heavy "$@" || heavy=$?
light=0
wait "$light_pid" || light=$?
echo "[test] the light part (ran beside the heavy one):"
cat "$TMP_ROOT/light.log"
echo "[test] heavy part: exit status $heavy; light part: exit status $light"
# 5 is pytest's "no tests collected": fine for one part when the other ran tests.
if [ "$heavy" -eq 5 ] && [ "$light" -ne 5 ]; then heavy=0; fi
if [ "$light" -eq 5 ] && [ "$heavy" -ne 5 ]; then light=0; fi
if [ "$heavy" -ne 0 ]; then exit "$heavy"; fi
exit "$light"
