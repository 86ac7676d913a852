#!/bin/bash
# Rules that read a document the node does not hold, on a node over PostgreSQL (docs/benchmarks.md, "Rule
# reads over PostgreSQL"): `hearth bench get --connections 50` over 1,000 documents whose read rule checks
# that no `banned/<id>` document exists (`!exists(...)`: an absent document is never cached, so every
# judgement of a cached document needs a read of PostgreSQL), with a second client pinging the node back to
# back meanwhile; alternated with a baseline daemon:
#
#   BASELINE_HEARTHD=/path/to/old/hearthd clients/python/bench/pg_rule_reads.sh [rounds] [seconds]   (2 8)
#
# Prints per daemon: gets/s, p50/p99, daemon CPU per get, `store.loopReads` moved during the run (reads the
# loop made), and the pings' p50/p99/max (how long every other client waits). Needs a release build (make
# release) and Debian's postgresql-15.
set -euo pipefail
rounds=${1:-2}; seconds=${2:-8}
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd)
hearth=$root/.build/release/hearth
port=${PG_PORT:-25437}; node=${HEARTH_PORT:-7641}
pg_name=pg_rule_reads.sh
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"
dsn="host=127.0.0.1 port=$port user=postgres dbname=postgres"
rules=$dir/rule_reads.rules
openssl rand -hex 32 > "$dir/admin.key"
cat > "$rules" <<'RULES'
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /bench/{id} {
      allow read: if !exists(/databases/$(database)/documents/banned/$(id));
      allow write: if true;
    }
  }
}
RULES
daemons=("$root/.build/release/hearthd")
[ -n "${BASELINE_HEARTHD:-}" ] && daemons=("$BASELINE_HEARTHD" "${daemons[@]}")
loop_reads() {   # `stats` is the admin's under rules; store.loopReads is absent from older daemons
  "$hearth" send '{"op":"stats"}' --port "$node" --admin-key-file "$dir/admin.key" --json 2>/dev/null |
    python3 -c 'import json,sys; print(json.loads(sys.stdin.readline()).get("store", {}).get("loopReads", "n/a"))'
}
for r in $(seq "$rounds"); do
  for d in "${daemons[@]}"; do
    data=$(mktemp -d /tmp/hearth-bench-XXXXXX)
    "$d" --port "$node" --data-dir "$data" --quiet --postgres "$dsn" --postgres-schema "rr_${r}_$RANDOM" --rules "$rules" --admin-key-file "$dir/admin.key" & pid=$!
    trap 'kill $pid 2>/dev/null || true; cleanup' EXIT
    for _ in $(seq 100); do "$hearth" send '{"op":"ping"}' --port "$node" >/dev/null 2>&1 && break; sleep 0.1; done
    # Load the documents, and read each once so that the document cache holds it: from then on every get is
    # answered on the loop but for the rule's read of banned/<id>.
    "$hearth" bench get --port "$node" --connections 8 --keys 1000 --duration 2 --warmup 0 --json > /dev/null
    reads_before=$(loop_reads)
    before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    python3 "$here/pinger.py" "$node" "$seconds" > "$data/pings" &
    pinger=$!
    out=$("$hearth" bench get --port "$node" --connections 50 --keys 1000 --no-load --duration "$seconds" --warmup 0 --json)
    wait "$pinger"
    cpu=$(( $(awk '{print $14 + $15}' "/proc/$pid/stat") - before ))
    reads_after=$(loop_reads)
    python3 - "$out" "round $r $d" "$cpu" "$(getconf CLK_TCK)" "$reads_before" "$reads_after" <<'PY'
import json, sys
r = json.loads(sys.argv[1]); lat = r["latency_us"]; cpu = int(sys.argv[3]) / int(sys.argv[4])
per = cpu * 1e6 / max(r["requests"], 1)
moved = "n/a" if "n/a" in sys.argv[5:7] else int(sys.argv[6]) - int(sys.argv[5])
print(f"{sys.argv[2]}: {r['ops_per_sec']:,.0f} gets/s, p50 {lat['p50'] / 1000:.2f} ms, p99 {lat['p99'] / 1000:.2f} ms, "
      f"errors {r['errors']}, daemon CPU {per:.0f} us per get, loop store reads {moved}")
PY
    echo "  $(cat "$data/pings")"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    rm -rf "$data"
  done
done
