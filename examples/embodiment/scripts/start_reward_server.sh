#!/usr/bin/env bash
# Start the VLM reward server and wait until it is ready.
#
#   bash examples/embodiment/scripts/start_reward_server.sh BACKEND MODEL_PATH [extra server flags...]
#
# BACKEND: a registered backend or alias (run without arguments to list them; docs/server/backends.md).
# Env: HOST and PORT (the server's --host and --port defaults), VIDEO_ROOT (system temp dir: must
# contain the trainer's temp_video_dir),
# PYTHON (default: picked by vlm_reward.tools.runtime: .venv's, or .venv-vllm's for a vLLM backend
# when .venv has no vLLM), LOG_FILE (logs/reward_server-<port>.log), WAIT_S (600),
# ENV_CONFIG (the env YAML it judges for, default libero_10.yaml: a --self-test asks as it asks).
# The server keeps running in the background; its PID is printed. Stop it with: kill <PID>.
set -euo pipefail

REPO_PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
MAIN_PYTHON=python
if [ -x "$REPO_PATH/.venv/bin/python" ]; then MAIN_PYTHON="$REPO_PATH/.venv/bin/python"; fi
# The usage's backends and the default HOST and PORT come from the code (the registry, the protocol).
from_code() { PYTHONPATH="$REPO_PATH${PYTHONPATH:+:$PYTHONPATH}" "$MAIN_PYTHON" -c "$1"; }
if [ $# -lt 2 ]; then
  sed -n '2,/^[^#]/{/^#/p}' "$0" >&2  # the header comment
  from_code 'from vlm_reward.backends import available_backends
from vlm_reward.protocol import DEFAULT_HOST, DEFAULT_PORT
print("backends:", ", ".join(available_backends()))
print("default HOST:", DEFAULT_HOST)
print("default PORT:", DEFAULT_PORT)' >&2
  exit 2
fi
BACKEND="$1"
MODEL="$2"
shift 2
read -r SERVER_HOST SERVER_PORT < <(from_code 'from vlm_reward.protocol import DEFAULT_HOST, DEFAULT_PORT
print(DEFAULT_HOST, DEFAULT_PORT)')
HOST="${HOST:-$SERVER_HOST}"
PORT="${PORT:-$SERVER_PORT}"
WAIT_S="${WAIT_S:-600}"
ENV_CONFIG="${ENV_CONFIG:-$REPO_PATH/examples/embodiment/config/env/libero_10.yaml}"
if [ -z "${PYTHON:-}" ]; then
  # Prints PYTHON=... (and export lines with vLLM CPU defaults); exits 1 saying how to set up.
  launch="$(PYTHONPATH="$REPO_PATH${PYTHONPATH:+:$PYTHONPATH}" "$MAIN_PYTHON" -m vlm_reward.tools.runtime "$BACKEND")"
  eval "$launch"
fi
# The env's success threshold and what it asks the judge, for a --self-test; a YAML that does
# not load is the module's one sentence and exit status 2.
if ! flags="$(PYTHONPATH="$REPO_PATH${PYTHONPATH:+:$PYTHONPATH}" "$MAIN_PYTHON" -m examples.embodiment.judge_flags "$ENV_CONFIG")"; then
  exit 2
fi
mapfile -t SELF_TEST_FLAGS <<<"$flags"
LOG_FILE="${LOG_FILE:-$REPO_PATH/logs/reward_server-$PORT.log}"
mkdir -p "$(dirname "$LOG_FILE")"

ARGS=(--backend "$BACKEND" --model "$MODEL" --host "$HOST" --port "$PORT" "${SELF_TEST_FLAGS[@]}")
if [ -n "${VIDEO_ROOT:-}" ]; then ARGS+=(--video-root "$VIDEO_ROOT"); fi
PYTHONPATH="$REPO_PATH${PYTHONPATH:+:$PYTHONPATH}" nohup "$PYTHON" -m vlm_reward.libero_reward_server \
  "${ARGS[@]}" "$@" >> "$LOG_FILE" 2>&1 &
PID=$!
echo "[reward-server] pid $PID ($PYTHON), log $LOG_FILE; waiting for http://$HOST:$PORT/health (up to ${WAIT_S} s)"

deadline=$((SECONDS + WAIT_S))
while true; do
  if ! kill -0 "$PID" 2>/dev/null; then
    # The server's own sentence first (e.g. a model path that does not exist), then context.
    reason="$(grep -h 'error: ' "$LOG_FILE" | tail -n 1 | sed 's/.*error: //')"
    echo "[reward-server] exited before becoming ready${reason:+: $reason}; last log lines:" >&2
    tail -n 20 "$LOG_FILE" >&2
    exit 1
  fi
  # Prints the /health status; for a backend that will never serve (it failed to load, or failed
  # its --self-test: vlm_reward.tools.server_process.NEVER_READY), also the reason.
  status="$("$PYTHON" -c 'import json, sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=5).status)
except urllib.error.HTTPError as e:
    error = json.loads(e.read() or b"{}").get("error", {}) if e.code == 503 else {}
    print(e.code, error["message"] if error.get("type") in ("backend_load_failed", "self_test_failed") else "")
except Exception:
    print(0)' "http://$HOST:$PORT/health" 2>/dev/null || echo 0)"
  if [ "$status" = "200" ]; then break; fi
  if [ "${status#503 }" != "$status" ] && [ -n "${status#503 }" ]; then
    echo "[reward-server] ${status#503 }; see $LOG_FILE" >&2
    kill "$PID"
    exit 1
  fi
  if [ $SECONDS -ge $deadline ]; then
    echo "[reward-server] not ready after ${WAIT_S} s (last /health status: $status); see $LOG_FILE" >&2
    kill "$PID"
    exit 1
  fi
  sleep 2
done
echo "[reward-server] ready. Put this in the env YAML (or pass it as an override):"
echo "  env.train.reward_model.endpoint=http://$HOST:$PORT/score"
echo "  env.train.reward_model.backend=$BACKEND"
echo "[reward-server] stop it with: kill $PID"
