#!/bin/bash
# The three-node fan-out case of cluster_bench.sh alone, in three rounds on fresh schemas of one throwaway
# PostgreSQL: 1,000 listeners spread over three nodes, one writer on the committer, one write in flight;
# prints writes, deliveries/s, every node's CPU per delivery and the write -> delivery p50 (docs/benchmarks.md,
# "Several nodes over PostgreSQL"). Needs a release build and Debian's postgresql-15.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd)
hearthd=$root/.build/release/hearthd; hearth=$root/.build/release/hearth
port=25437; base=7640; pg_name=cluster_fanout_rounds.sh; pg_settings="-c synchronous_commit=on -c max_connections=300"
. "$here/pg_cluster.sh"
dsn="host=127.0.0.1 port=$port user=postgres dbname=postgres"
for r in 1 2 3; do
  pids=(); dirs=()
  for i in 0 1 2; do p=$((base+i)); d=$(mktemp -d /tmp/hearth-bench-XXXXXX); dirs+=("$d")
    "$hearthd" --port $p --advertise 127.0.0.1:$p --node-name n$i --data-dir $d/data --quiet --postgres "$dsn" --postgres-schema fx_$r & pids+=($!)
    for _ in $(seq 100); do "$hearth" send '{"op":"ping"}' --port $p >/dev/null 2>&1 && break; sleep 0.1; done
  done
  t0=$(for p in "${pids[@]}"; do awk '{print $14+$15}' /proc/$p/stat; done | paste -sd+ | bc)
  out=$("$hearth" bench listen --host 127.0.0.1:$base,127.0.0.1:$((base+1)),127.0.0.1:$((base+2)) --writer-host 127.0.0.1:$base --listeners 1000 --connections 1 --duration 8 --warmup 0 --json)
  t1=$(for p in "${pids[@]}"; do awk '{print $14+$15}' /proc/$p/stat; done | paste -sd+ | bc)
  python3 -c "import json,sys; o=json.loads(sys.argv[1]); d=o['deliveries']; print('round', $r, o['requests'], 'writes', int(o['deliveries_per_sec']), 'deliveries/s', round(($t1-$t0)/100/d*1e6,1), 'us/delivery (all nodes)', 'p50', o['latency_us']['p50']/1000)" "$out"
  for p in "${pids[@]}"; do kill $p; done; for p in "${pids[@]}"; do wait $p 2>/dev/null || true; done
  for d in "${dirs[@]}"; do rm -rf $d; done
done
