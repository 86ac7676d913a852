#!/bin/bash
# The call-records query, Hearth beside PostgreSQL 15, alternated in one run (docs/benchmarks.md, "Reads on
# every core"): `where customerId == X orderBy callDate desc limit 20` for a random customer, 50 connections.
#
#   clients/python/bench/query_vs_postgres.sh [rounds] [records] [customers] [seconds]   (defaults 3 100000 1000 8)
#
# Environment: HEARTHD (default .build/release/hearthd), HEARTH (default .build/release/hearth), HEARTHD_ARGS
# (extra daemon flags, e.g. "--readers 1"), HEARTHD_TASKSET (e.g. "taskset -c 0" to pin the daemon),
# BASELINE_HEARTHD (a second daemon binary run in each round before HEARTHD, e.g. an older build).
#
# Loads the records once into a throwaway data directory (clients/python/bench/call_records.py, commits of 500,
# with the composite index), then per round: restarts each daemon on that directory, warms it with a 3 s run
# (the document cache fills), runs `hearth bench query` for the given seconds, and runs
# clients/python/bench/pg_call_records.sh (its own throwaway cluster, same data and query, pgbench -c 50 -j 2).
set -euo pipefail
rounds=${1:-3}; records=${2:-100000}; customers=${3:-1000}; seconds=${4:-8}
here=$(cd "$(dirname "$0")" && pwd)
hearthd=${HEARTHD:-.build/release/hearthd}
hearth=${HEARTH:-.build/release/hearth}
port=${HEARTH_BENCH_PORT:-7431}
dir=$(mktemp -d /tmp/hearth-query-XXXXXX)
pid=
stop() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi; }
trap 'stop; rm -rf "$dir"' EXIT
start() {   # start BINARY: a daemon on the data directory
  # shellcheck disable=SC2086
  ${HEARTHD_TASKSET:-} "$1" --port "$port" --data-dir "$dir" --quiet ${HEARTHD_ARGS:-} > "$dir.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/"$port") 2> /dev/null && return; sleep 0.1; done
  echo "the daemon did not start: $(cat "$dir.log")" >&2; exit 1
}
measure() {   # measure LABEL BINARY
  start "$2"
  "$hearth" bench query --port "$port" --connections 50 --duration 3 --keys "$customers" > /dev/null
  local out
  out=$("$hearth" bench query --port "$port" --connections 50 --duration "$seconds" --keys "$customers")
  stop
  echo "$1: $(echo "$out" | grep -E 'throughput' | awk '{print $2, $3}'), $(echo "$out" | grep -E '^  server' | sed 's/.*: //')"
}
start "$hearthd"
python3 "$here/call_records.py" --port "$port" --records "$records" --customers "$customers" --samples 100 > /dev/null
stop
for r in $(seq "$rounds"); do
  echo "round $r"
  if [ -n "${BASELINE_HEARTHD:-}" ]; then measure "  baseline $BASELINE_HEARTHD" "$BASELINE_HEARTHD"; fi
  measure "  hearth" "$hearthd"
  pg=$(bash "$here/pg_call_records.sh" "$records" "$customers" 50 "$seconds")
  tps=$(echo "$pg" | grep '^tps' | awk '{print $3}')
  if [ -z "$tps" ]; then echo "  postgresql: no result; pgbench said:"; echo "$pg"; exit 1; fi
  echo "  postgresql: $tps queries/s"
done
