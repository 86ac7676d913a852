#!/bin/bash
# Instructions the daemon executes per listener delivery, counted by valgrind's callgrind: a figure that does
# not move with the machine's load (docs/benchmarks.md, "The write path"). `hearth bench listen` with 1,000
# subscribers and 64 writes in flight against the daemon under callgrind; the count is the inclusive cost of
# `ListenerHub.publish` (matching, applying, encoding and appending every delivery to its connection) divided
# by the deliveries the bench received.
#
#   clients/python/bench/fanout_instructions.sh [HEARTHD...]   (default .build/release/hearthd)
#
# Environment: HEARTH (default .build/release/hearth), HEARTH_BENCH_PIPELINE (writes in flight, default 64). Needs valgrind. Each binary is copied without its debug
# information first (valgrind 3.19 cannot read the DWARF 5 the Swift compiler writes).
set -euo pipefail
hearth=${HEARTH:-.build/release/hearth}
port=${HEARTH_BENCH_PORT:-7435}
pipeline=${HEARTH_BENCH_PIPELINE:-64}
dir=$(mktemp -d /tmp/hearth-fanout-XXXXXX)
pid=
stop() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi; }
trap 'stop; rm -rf "$dir"' EXIT
[ $# -gt 0 ] || set -- .build/release/hearthd
for bin in "$@"; do
  objcopy --strip-debug "$bin" "$dir/hearthd"
  rm -rf "$dir"/cg.out* "$dir/data"
  valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" "$dir/hearthd" --port "$port" --data-dir "$dir/data" --quiet > "$dir/cg.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do (echo > /dev/tcp/127.0.0.1/"$port") 2> /dev/null && break; sleep 0.2; done
  out=$("$hearth" bench listen --port "$port" --listeners 1000 --connections 1 --pipeline "$pipeline" --duration 20 --server-pid "$pid")
  stop
  n=$(echo "$out" | grep -E '^  deliveries' | awk '{print $2}' | tr -d ,)
  callgrind_annotate --inclusive=yes "$(ls "$dir"/cg.out* | head -1)" > "$dir/annotate.txt" 2> /dev/null
  publish=$(awk '/ListenerHubC7publish/ { gsub(",", "", $1); print $1; exit }' "$dir/annotate.txt")
  total=$(awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }' "$dir/annotate.txt")
  echo "$bin: $((publish / n)) instructions per delivery in ListenerHub.publish, $((total / n)) in the daemon ($n deliveries, $pipeline in flight)"
done
