#!/usr/bin/env bash
# Run every benchmark, the load test and the expert's success rate one after another
# (about 25 min on 2 cores).
# Each prints its own table; extra arguments are not passed on (each script has its own).
# Run nothing else meanwhile: the LIBERO ones need the CPUs and ~3 GB per env.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
PY="${VENV:-$ROOT/.venv}/bin/python"
for bench in bench_episode_end_cost bench_concurrent_scoring bench_env_overhead bench_server_batching \
    bench_server_overhead bench_memory load_test bench_abuse_recovery expert_success; do
    echo "=== benchmarks/$bench.py"
    "$PY" "benchmarks/$bench.py"
    echo
done
