#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite plus ruff.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not libero and not slow"`.
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
exec "$VENV/bin/python" -m pytest "$@"
