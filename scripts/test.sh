#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite plus ruff.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not libero and not slow"`.
# Two xdist workers: the heavy tests (LIBERO, vLLM, training) one at a time on one, the rest
# beside them (tests/conftest.py); TEST_WORKERS=0 runs everything in this one process.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
VENV="${VENV:-$ROOT/.venv}"
echo "[test] ruff"
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .
echo "[test] pytest"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
exec "$VENV/bin/python" -m pytest -n "${TEST_WORKERS:-2}" --dist loadgroup "$@"
