#!/usr/bin/env bash
# Build the documentation site (MkDocs + Material, mkdocs.yml) into site/, strictly: a broken link,
# a missing page or an unknown generated part fails the build. The reference pages are rendered
# from the code at build time (docgen/), so this runs with the repo root first on PYTHONPATH.
#
#   bash scripts/docs.sh                  build into site/ (open site/index.html)
#   bash scripts/docs.sh build [ARGS...]  the same, with more `mkdocs build` arguments (--site-dir DIR)
#   bash scripts/docs.sh serve [ARGS...]  serve on 127.0.0.1 (DOCS_PORT, default 8000), rebuilding on edits
#
# Needs nothing from the network. `scripts/setup.sh` installs MkDocs into .venv (VENV= moves it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
if ! "$VENV/bin/python" -c "import mkdocs, material, mkdocstrings" 2>/dev/null; then
  echo "[docs] MkDocs is not installed in $VENV: run bash scripts/setup.sh first." >&2
  exit 1
fi
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
# Material 9.7+ prints a banner about its successor on every build; the pinned version builds as is.
export NO_MKDOCS_2_WARNING="${NO_MKDOCS_2_WARNING:-1}"
cd "$ROOT"
MODE="${1:-build}"
[ $# -gt 0 ] && shift
case "$MODE" in
  build) exec "$VENV/bin/python" -m mkdocs build --strict "$@" ;;
  serve) exec "$VENV/bin/python" -m mkdocs serve --strict --dev-addr "127.0.0.1:${DOCS_PORT:-8000}" "$@" ;;
  *)
    echo "[docs] unknown mode '$MODE': use build or serve." >&2
    exit 2
    ;;
esac
