#!/bin/bash
# Instructions the daemon's loop thread executes per durable set, counted by valgrind's callgrind: a figure
# that does not move with the machine's load (docs/benchmarks.md, "The write path"). `hearth bench set` with
# 50 connections (groups of up to 50 commits, as in set_vs_peers.sh) over 10,000 keys: 25,000 sets
# unmeasured (most keys are then in the document cache), then 5,000 measured.
#
#   clients/python/bench/set_instructions.sh [HEARTHD...]   (default .build/release/hearthd; several binaries
#                                                           are measured one after the other)
#
# Environment: HEARTH (default .build/release/hearth). Needs valgrind (apt-get install valgrind). Each binary
# is copied without its debug information first (valgrind 3.19 cannot read the DWARF 5 the Swift compiler
# writes). Prints the loop thread's count per set and the whole daemon's (the applier's share moves with how
# many of its transactions fall in the measured window, so compare the loop's).
set -euo pipefail
hearth=${HEARTH:-.build/release/hearth}
port=${HEARTH_BENCH_PORT:-7432}
dir=$(mktemp -d /tmp/hearth-instructions-XXXXXX)
pid=
stop() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi; }
trap 'stop; rm -rf "$dir"' EXIT
wait_port() { for _ in $(seq 600); do (echo > /dev/tcp/127.0.0.1/"$port") 2> /dev/null && return; sleep 0.2; done; echo "the daemon did not start" >&2; exit 1; }
[ $# -gt 0 ] || set -- .build/release/hearthd
for bin in "$@"; do
  objcopy --strip-debug "$bin" "$dir/hearthd"
  rm -rf "$dir"/cg.out* "$dir/data"
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$dir/cg.out" "$dir/hearthd" --port "$port" \
    --data-dir "$dir/data" --quiet > "$dir/cg.log" 2>&1 &
  pid=$!
  wait_port
  "$hearth" bench set --port "$port" --connections 50 --requests 25000 --duration 300 > /dev/null    # warm-up
  callgrind_control -z "$pid" > "$dir/ctl.log" 2>&1 || { echo "callgrind_control -z failed:" >&2; cat "$dir/ctl.log" >&2; exit 1; }
  out=$("$hearth" bench set --port "$port" --connections 50 --requests 5000 --duration 300)
  callgrind_control -d "$pid" > "$dir/ctl.log" 2>&1 || { echo "callgrind_control -d failed:" >&2; cat "$dir/ctl.log" >&2; exit 1; }
  stop
  n=$(echo "$out" | grep -E '^  measured' | awk '{print $2}' | tr -d ,)
  if [ -z "$n" ] || [ "$n" -eq 0 ]; then echo "$bin: the bench measured no set: $out" >&2; cat "$dir/cg.log" >&2; exit 1; fi
  total=0; loop=0
  for f in "$dir"/cg.out.1-*; do    # the dump callgrind_control -d asked for (part 1), one file per thread
    ir=$(grep -m1 '^summary:' "$f" | awk '{print $2}')
    total=$((total + ir))
    # The loop thread is the main thread: the file whose thread number is 1.
    if grep -q '^thread: 1$' "$f"; then loop=$((loop + ir)); fi
  done
  echo "$bin: loop thread $((loop / n)), whole daemon $((total / n)) instructions per set ($n sets)"
done
