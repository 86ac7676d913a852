#!/bin/bash
# Several hearthd nodes over one PostgreSQL 15 (docs/benchmarks.md, "Several nodes"), all in one run on one
# throwaway PostgreSQL cluster on loopback, with each node's CPU read from /proc:
#
#   clients/python/bench/cluster_bench.sh [rounds] [seconds] [listeners]   (defaults 2 8 1000)
#
# Each round, each case on a fresh schema with fresh nodes:
#   writes      hearth bench set --connections 50 through 1 node alone; through 3 nodes (connections spread
#               over them, so two thirds are forwarded); straight to the committer while 2 followers follow
#   fan-out     hearth bench listen --listeners N --connections 1 (one write in flight): every listener on
#               1 node; spread over 3 nodes, the writer on the committer
#   cross-node  hearth bench listen --listeners 100: listeners on the 2 followers, writer on the committer:
#               commit -> delivery on another node, p50/p99
# Needs a release build (make release) and Debian's postgresql-15.
set -euo pipefail
rounds=${1:-2}; seconds=${2:-8}; listeners=${3:-1000}
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd)
hearthd=$root/.build/release/hearthd; hearth=$root/.build/release/hearth
port=${PG_PORT:-25435}; base=${HEARTH_PORT:-7620}
pg_name=cluster_bench.sh
pg_settings="-c synchronous_commit=on -c max_connections=300"
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"
dsn="host=127.0.0.1 port=$port user=postgres dbname=postgres"
hz=$(getconf CLK_TCK)
pids=(); ports=(); datadirs=()
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
start_nodes() {   # $1: how many, $2: schema
  pids=(); ports=(); datadirs=()
  for i in $(seq 0 $(($1 - 1))); do
    local p=$((base + i)) d; d=$(mktemp -d /tmp/hearth-bench-XXXXXX)
    "$hearthd" --port "$p" --advertise "127.0.0.1:$p" --node-name "n$i" --data-dir "$d/data" --quiet \
      --postgres "$dsn" --postgres-schema "$2" & pids+=($!); ports+=("$p"); datadirs+=("$d")
    for _ in $(seq 100); do "$hearth" send '{"op":"ping"}' --port "$p" >/dev/null 2>&1 && break; sleep 0.1; done
  done
}
stop_nodes() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for d in "${datadirs[@]}"; do rm -rf "$d"; done
}
cpu_before() { before=(); for p in "${pids[@]}"; do before+=("$(ticks "$p")"); done; pg_before=$(pg_ticks); }
cpu_after() {   # prints each node's CPU seconds since cpu_before
  local out="" i=0
  for p in "${pids[@]}"; do out+="$(( $(ticks "$p") - before[i] )) "; i=$((i + 1)); done
  echo "$out pg:$(( $(pg_ticks) - pg_before ))"
}
report() { python3 "$here/cluster_report.py" "$@"; }
for r in $(seq "$rounds"); do
  echo "round $r"
  # Writes.
  start_nodes 1 "w1_$r"; cpu_before
  out=$("$hearth" bench set --host "127.0.0.1:${ports[0]}" --connections 50 --duration "$seconds" --warmup 0 --json)
  report set "1 node" "$out" "$(cpu_after)" "$hz"; stop_nodes
  start_nodes 3 "w3_$r"; cpu_before
  out=$("$hearth" bench set --host "127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}" --connections 50 --duration "$seconds" --warmup 0 --json)
  report set "3 nodes, spread" "$out" "$(cpu_after)" "$hz"
  cpu_before
  out=$("$hearth" bench set --host "127.0.0.1:${ports[0]}" --connections 50 --duration "$seconds" --warmup 0 --json)
  report set "3 nodes, committer" "$out" "$(cpu_after)" "$hz"
  cpu_before
  out=$("$hearth" bench set --host "127.0.0.1:${ports[0]}" --connections 200 --duration "$seconds" --warmup 0 --json)
  report set "committer, 200 conns" "$out" "$(cpu_after)" "$hz"; stop_nodes
  # Fan-out.
  start_nodes 1 "f1_$r"; cpu_before
  out=$("$hearth" bench listen --host "127.0.0.1:${ports[0]}" --listeners "$listeners" --connections 1 --duration "$seconds" --warmup 0 --json)
  report listen "1 node" "$out" "$(cpu_after)" "$hz" "$listeners"; stop_nodes
  start_nodes 3 "f3_$r"; cpu_before
  out=$("$hearth" bench listen --host "127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}" --writer-host "127.0.0.1:${ports[0]}" \
        --listeners "$listeners" --connections 1 --duration "$seconds" --warmup 0 --json)
  report listen "3 nodes" "$out" "$(cpu_after)" "$hz" "$(( (listeners + 2) / 3 )) $(( (listeners + 1) / 3 )) $(( listeners / 3 ))"
  # Cross-node delivery: listeners only on the followers.
  cpu_before
  out=$("$hearth" bench listen --host "127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}" --writer-host "127.0.0.1:${ports[0]}" \
        --listeners 100 --connections 1 --duration "$seconds" --warmup 0 --json)
  report listen "followers only, 100" "$out" "$(cpu_after)" "$hz" "0 50 50"; stop_nodes
done
