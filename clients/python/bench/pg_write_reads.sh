#!/bin/bash
# Writes that must read first, on a node over PostgreSQL (docs/benchmarks.md, "Writes that read first"):
# durable sets of new documents (a key space of 1,000,000 never loaded, so no write finds its document in
# the cache) through one node over a throwaway PostgreSQL 15 on loopback, `hearth bench set --connections 50`,
# with a second client pinging the node back to back meanwhile; alternated with a baseline daemon:
#
#   BASELINE_HEARTHD=/path/to/old/hearthd clients/python/bench/pg_write_reads.sh [rounds] [seconds]   (2 8)
#
# Needs a release build (make release) and Debian's postgresql-15.
set -euo pipefail
rounds=${1:-2}; seconds=${2:-8}
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd)
hearth=$root/.build/release/hearth
port=${PG_PORT:-25436}; node=${HEARTH_PORT:-7640}
pg_name=pg_write_reads.sh
pg_settings="-c synchronous_commit=on"
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"
dsn="host=127.0.0.1 port=$port user=postgres dbname=postgres"
daemons=("$root/.build/release/hearthd")
[ -n "${BASELINE_HEARTHD:-}" ] && daemons=("$BASELINE_HEARTHD" "${daemons[@]}")
for r in $(seq "$rounds"); do
  for d in "${daemons[@]}"; do
    data=$(mktemp -d /tmp/hearth-bench-XXXXXX)
    "$d" --port "$node" --data-dir "$data" --quiet --postgres "$dsn" --postgres-schema "wr_${r}_$RANDOM" & pid=$!
    trap 'kill $pid 2>/dev/null || true; cleanup' EXIT
    for _ in $(seq 100); do "$hearth" send '{"op":"ping"}' --port "$node" >/dev/null 2>&1 && break; sleep 0.1; done
    before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    python3 "$here/pinger.py" "$node" "$seconds" > "$data/pings" &
    pinger=$!
    out=$("$hearth" bench set --port "$node" --connections 50 --keys 1000000 --no-load --duration "$seconds" --warmup 0 --json)
    wait "$pinger"
    cpu=$(( $(awk '{print $14 + $15}' "/proc/$pid/stat") - before ))
    python3 - "$out" "round $r $d" "$cpu" "$(getconf CLK_TCK)" <<'PY'
import json, sys
r = json.loads(sys.argv[1]); lat = r["latency_us"]; cpu = int(sys.argv[3]) / int(sys.argv[4])
per = cpu * 1e6 / max(r["requests"], 1)
print(f"{sys.argv[2]}: {r['ops_per_sec']:,.0f} sets/s, p50 {lat['p50'] / 1000:.2f} ms, p99 {lat['p99'] / 1000:.2f} ms, "
      f"errors {r['errors']}, daemon CPU {per:.0f} us per set")
PY
    echo "  $(cat "$data/pings")"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    rm -rf "$data"
  done
done
