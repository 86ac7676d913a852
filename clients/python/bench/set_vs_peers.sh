#!/bin/bash
# Durable single-document sets, Hearth beside PostgreSQL 15 and Redis, alternated in one run
# (docs/benchmarks.md, "The write path"): 50 connections, 300-byte documents, 10,000 keys.
#
#   clients/python/bench/set_vs_peers.sh [rounds] [seconds]   (defaults 3 8)
#
# Environment: HEARTHD (default .build/release/hearthd), HEARTH (default .build/release/hearth),
# BASELINE_HEARTHD (a second daemon binary run in each round before HEARTHD, e.g. an older build),
# METRICS_PORT (default 7433: each daemon serves Prometheus metrics there, for the mean group size and
# writer time per group).
#
# Per round: each daemon on a fresh data directory, `hearth bench set --connections 50 --duration S`;
# clients/python/bench/pg_set.sh (its own throwaway cluster: the same document upserted into a jsonb table
# with an expression index per field, synchronous_commit=on, pgbench -c 50 -j 2); redis-server with
# `appendonly yes, appendfsync always` on a fresh directory and `redis-benchmark -t set -c 50 -d 300 -r 10000`.
set -euo pipefail
rounds=${1:-3}; seconds=${2:-8}
here=$(cd "$(dirname "$0")" && pwd)
hearthd=${HEARTHD:-.build/release/hearthd}
hearth=${HEARTH:-.build/release/hearth}
port=${HEARTH_BENCH_PORT:-7432}
metrics=${METRICS_PORT:-7433}
redis_port=${REDIS_PORT:-7434}
pid=
dir=
stop() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi; if [ -n "$dir" ]; then rm -rf "$dir" "$dir.log"; dir=; fi; }
trap stop EXIT
wait_port() { for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/"$1") 2> /dev/null && return; sleep 0.1; done; echo "nothing listens on $1" >&2; exit 1; }
measure() {   # measure LABEL BINARY
  dir=$(mktemp -d /tmp/hearth-set-XXXXXX)
  "$2" --port "$port" --data-dir "$dir" --quiet --metrics-port "$metrics" > "$dir.log" 2>&1 &
  pid=$!
  wait_port "$port"
  local out groups
  out=$("$hearth" bench set --port "$port" --connections 50 --duration "$seconds")
  groups=$(curl -s "127.0.0.1:$metrics/metrics" | awk '/^hearth_commit_duration_seconds_sum/{s=$2} /^hearth_commit_duration_seconds_count/{c=$2}
    /^hearth_commit_batch_size_sum/{b=$2} END{ if (c > 0) printf "%.1f commits per group, %.2f ms per group", b/c, s/c*1000 }')
  stop
  echo "$1: $(echo "$out" | grep -E 'throughput' | awk '{print $2, $3}'), $(echo "$out" | grep -E '^  server' | sed 's/.*: //'); $groups"
}
for r in $(seq "$rounds"); do
  echo "round $r"
  if [ -n "${BASELINE_HEARTHD:-}" ]; then measure "  baseline $BASELINE_HEARTHD" "$BASELINE_HEARTHD"; fi
  measure "  hearth" "$hearthd"
  pg=$(bash "$here/pg_set.sh" 10000 50 "$seconds")
  tps=$(echo "$pg" | grep '^tps' | awk '{print $3}')
  if [ -z "$tps" ]; then echo "  postgresql: no result; pgbench said:"; echo "$pg"; exit 1; fi
  echo "  postgresql: $tps upserts/s"
  rdir=$(mktemp -d /tmp/hearth-redis-XXXXXX)
  redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$rdir" --appendonly yes --appendfsync always --save "" > "$rdir.log" 2>&1 &
  rpid=$!
  wait_port "$redis_port"
  requests=$((seconds * 15000))
  rs=$(redis-benchmark -p "$redis_port" -t set -c 50 -d 300 -r 10000 -n "$requests" -q 2>/dev/null | tr '\r' '\n' | grep 'requests per second' | tail -1)
  kill "$rpid"; wait "$rpid" 2>/dev/null || true; rm -rf "$rdir" "$rdir.log"
  echo "  redis (appendfsync always): $(echo "$rs" | awk '{print $2}') sets/s"
done
