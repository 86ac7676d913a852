#!/bin/bash
# Instructions the daemon executes per call-records query, counted by valgrind's callgrind: a figure that does
# not move with the machine's load (docs/benchmarks.md, "Reads on every core"). The same query as
# query_vs_postgres.sh, 8 connections, customers drawn from --keys (100 by default, so that after the warm-up
# every result comes from the document cache: the hit path).
#
#   clients/python/bench/query_instructions.sh [HEARTHD...]   (default .build/release/hearthd; several binaries
#                                                             are measured one after the other on the same data)
#
# Environment: KEYS (customers queried, default 100), RECORDS (default 100000), CUSTOMERS (default 1000),
# HEARTH (default .build/release/hearth). Needs valgrind (apt-get install valgrind). Each binary is copied
# without its debug information first (valgrind 3.19 cannot read the DWARF 5 the Swift compiler writes).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
hearth=${HEARTH:-.build/release/hearth}
keys=${KEYS:-100}; records=${RECORDS:-100000}; customers=${CUSTOMERS:-1000}
port=${HEARTH_BENCH_PORT:-7432}
dir=$(mktemp -d /tmp/hearth-instructions-XXXXXX)
pid=
stop() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi; }
trap 'stop; rm -rf "$dir"' EXIT
wait_port() { for _ in $(seq 300); do (echo > /dev/tcp/127.0.0.1/"$port") 2> /dev/null && return; sleep 0.2; done; echo "the daemon did not start" >&2; exit 1; }
[ $# -gt 0 ] || set -- .build/release/hearthd
"$1" --port "$port" --data-dir "$dir/data" --quiet > "$dir/load.log" 2>&1 & pid=$!
wait_port
python3 "$here/call_records.py" --port "$port" --records "$records" --customers "$customers" --samples 100 > /dev/null
stop
for bin in "$@"; do
  objcopy --strip-debug "$bin" "$dir/hearthd"
  rm -f "$dir"/cg.out*
  valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" "$dir/hearthd" --port "$port" --data-dir "$dir/data" --quiet > "$dir/cg.log" 2>&1 &
  pid=$!
  wait_port
  "$hearth" bench query --port "$port" --connections 8 --duration 20 --keys "$keys" > /dev/null    # warm-up
  callgrind_control -z "$pid" > /dev/null 2>&1
  out=$("$hearth" bench query --port "$port" --connections 8 --duration 15 --keys "$keys")
  callgrind_control -d "$pid" > /dev/null 2>&1
  stop
  n=$(echo "$out" | grep -E '^  measured' | awk '{print $2}' | tr -d ,)
  ir=$(callgrind_annotate "$(ls "$dir"/cg.out.* | head -1)" 2> /dev/null | grep 'PROGRAM TOTALS' | awk '{print $1}' | tr -d ,)
  echo "$bin: $((ir / n)) instructions per query ($n queries; the count includes the bench's own 1 s warm-up)"
done
