#!/bin/bash
# Get throughput with request counting (this build) against a build without it, alternated in one session:
# `hearth bench get` closed loop (50 connections, 8 s) against each daemon in turn, `rounds` times.
#
#   HEARTH_BASE_BUILD=/path/to/baseline/.build/release clients/python/bench/metrics_overhead.sh [rounds]
#
# Both builds: swift build -c release. The load generator is this build's hearth. Prints ops/s, daemon CPU µs
# per request, p50 and p99 µs for each run.
set -euo pipefail
rounds=${1:-3}
B=${HEARTH_BUILD:-$(cd "$(dirname "$0")/../../.." && pwd)/.build/release}
BASE=${HEARTH_BASE_BUILD:?set HEARTH_BASE_BUILD to the baseline build directory}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT

run() {   # label, hearthd binary, extra args...
  local label=$1 bin=$2; shift 2
  rm -rf "$dir/data"
  "$bin" --port 0 --data-dir "$dir/data" "$@" 2> "$dir/log" & local pid=$!
  local port=""
  for _ in $(seq 100); do port=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$dir/log" | grep -o '[0-9]*$' || true); [ -n "$port" ] && break; sleep 0.05; done
  "$B/hearth" bench get --port "$port" -c 50 -d 8 --server-pid "$pid" --json > "$dir/out.json"
  kill "$pid"; wait "$pid" 2> /dev/null || true
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(f\"{sys.argv[2]:10} {d['ops_per_sec']:>9.0f} ops/s  {d['server']['cpu_us_per_request']:>6.2f} us/req  p50 {d['latency_us']['p50']} us  p99 {d['latency_us']['p99']} us\")" "$dir/out.json" "$label"
}

for _ in $(seq "$rounds"); do
  run baseline "$BASE/hearthd"
  run counting "$B/hearthd" --metrics-port 0
done
