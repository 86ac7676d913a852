#!/bin/bash
# Durable sets through hearthd with its store in PostgreSQL (`hearthd --postgres`), beside hearthd on its
# embedded store and beside PostgreSQL itself doing the same upsert (pg_set.sh's table and script), all in one
# run on one throwaway PostgreSQL 15 cluster (docs/benchmarks.md, "hearthd on PostgreSQL").
#
#   clients/python/bench/postgres_store_set.sh [rounds] [seconds] [connections]   (defaults 3 8 50)
#
# Each round, in this order: hearthd on a fresh data directory; hearthd --postgres on a fresh schema; pgbench
# -c connections -j 2 on the upsert. Prints sets/s, latency, and the CPU per set of hearthd and of PostgreSQL
# (all its processes, from /proc). Needs a release build (make release) and Debian's postgresql-15.
set -euo pipefail
rounds=${1:-3}; seconds=${2:-8}; conns=${3:-50}
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd)
hearthd=$root/.build/release/hearthd; hearth=$root/.build/release/hearth
port=${PG_PORT:-25434}; hport=${HEARTH_PORT:-7611}
pg_name=postgres_store_set.sh
pg_settings="-c synchronous_commit=on"
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"
dsn="host=127.0.0.1 port=$port user=postgres dbname=postgres"
keys=10000
# shellcheck source=pg_set_table.sh
. "$here/pg_set_table.sh"
hz=$(getconf CLK_TCK)
run_hearthd() {   # $1: label, then hearthd's extra flags
  local label=$1; shift
  local data; data=$(mktemp -d /tmp/hearth-bench-XXXXXX)
  "$hearthd" --port "$hport" --data-dir "$data/data" --quiet "$@" & local pid=$!
  for _ in $(seq 100); do "$hearth" send '{"op":"ping"}' --port "$hport" >/dev/null 2>&1 && break; sleep 0.1; done
  local pg0; pg0=$(pg_ticks)
  local out; out=$("$hearth" bench set --port "$hport" --connections "$conns" --duration "$seconds" --json --server-pid "$pid")
  local pg1; pg1=$(pg_ticks)
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -rf "$data"
  python3 - "$label" "$out" "$pg0" "$pg1" "$hz" <<'PY'
import json, sys
label, out, pg0, pg1, hz = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
ops = out["ops_per_sec"]; n = out["requests"]
pg = (pg1 - pg0) / hz
lat = out["latency_us"]
print(f"{label:22s} {ops:>9,.0f} sets/s  p50 {lat['p50'] / 1000:.2f} p99 {lat['p99'] / 1000:.2f} ms  "
      f"hearthd {out['server']['cpu_us_per_request']:.0f} us/set  PostgreSQL {pg / n * 1e6:.0f} us/set")
PY
}
for r in $(seq "$rounds"); do
  echo "round $r"
  run_hearthd "hearthd (SQLite)"
  run_hearthd "hearthd --postgres" --postgres "$dsn" --postgres-schema "bench_$r"
  pg0=$(pg_ticks)
  res=$(as_pg pgbench -n -h 127.0.0.1 -p "$port" -U postgres -c "$conns" -j 2 -T "$seconds" -f "$dir/set.sql" postgres 2>&1)
  pg1=$(pg_ticks)
  tps=$(echo "$res" | awk '/^tps/ {print $3}'); lat=$(echo "$res" | awk '/latency average/ {print $4}')
  tx=$(echo "$res" | awk '/number of transactions actually processed/ {print $NF}')
  python3 -c "import sys; tps, lat, tx, pg = float('$tps'), '$lat', int('$tx'), ($pg1 - $pg0) / $hz; print(f\"{'PostgreSQL (pgbench)':22s} {tps:>9,.0f} sets/s  mean {lat} ms  PostgreSQL {pg / tx * 1e6:.0f} us/set\")"
done
