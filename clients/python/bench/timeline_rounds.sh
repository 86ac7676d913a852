#!/bin/bash
# A post to 1,000 followers with live feed listeners, alternated between two daemon builds
# (docs/benchmarks.md, "The write path"): posts/s, commit -> last follower p50/p99, and how many groups'
# commit-log append and fsync (`hearth_commit_duration_seconds`) took over 32 ms and over 131 ms, and how
# many groups the commit log's writer held back to the applier's pace and at the backlog's bound (in all).
#
#   clients/python/bench/timeline_rounds.sh [rounds] [seconds]   (defaults 3 20)
#
# Environment: HEARTHD (default .build/release/hearthd), HEARTH (default .build/release/hearth),
# BASELINE_HEARTHD (a second daemon binary run in each round before HEARTHD, e.g. an older build),
# METRICS_PORT (default 7436).
#
# Per round and daemon: a fresh data directory, `hearth bench timeline --followers 1000 --duration S`.
set -euo pipefail
rounds=${1:-3}; seconds=${2:-20}
hearthd=${HEARTHD:-.build/release/hearthd}
hearth=${HEARTH:-.build/release/hearth}
port=${HEARTH_BENCH_PORT:-7435}
metrics=${METRICS_PORT:-7436}
pid=
dir=
stop() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi; if [ -n "$dir" ]; then rm -rf "$dir" "$dir.log"; dir=; fi; }
trap stop EXIT
wait_port() { for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/"$1") 2> /dev/null && return; sleep 0.1; done; echo "nothing listens on $1" >&2; exit 1; }
measure() {   # measure LABEL BINARY
  dir=$(mktemp -d /tmp/hearth-timeline-XXXXXX)
  "$2" --port "$port" --data-dir "$dir" --quiet --metrics-port "$metrics" > "$dir.log" 2>&1 &
  pid=$!
  wait_port "$port"
  local out tail
  out=$("$hearth" bench timeline --port "$port" --followers 1000 --duration "$seconds" --server-pid "$pid" 2> /dev/null)
  tail=$(curl -s "127.0.0.1:$metrics/metrics" | awk '/^hearth_commit_duration_seconds_bucket\{le="0.032768"\}/{a=$2}
    /^hearth_commit_duration_seconds_bucket\{le="0.131072"\}/{b=$2} /^hearth_commit_duration_seconds_count/{c=$2}
    /^hearth_applier_paced_groups_total/{pg=$2} /^hearth_applier_paced_seconds_total/{ps=$2}
    /^hearth_applier_blocked_groups_total/{bg=$2} /^hearth_applier_blocked_seconds_total/{bs=$2}
    END{printf "%d groups, %d over 32 ms, %d over 131 ms", c, c - a, c - b
        if (pg != "") printf "; paced %d (%.2f s), blocked %d (%.2f s)", pg, ps, bg, bs}')
  stop
  echo "$1: $(echo "$out" | grep -E '^  posts ' | sed 's/.*= //' | cut -d' ' -f1-2); commit -> last follower $(echo "$out" | grep 'commit -> received' | tr -s ' ' | cut -d' ' -f7-15); $(echo "$out" | grep -E '^  server' | sed 's/.*: //'); $tail"
}
for r in $(seq "$rounds"); do
  echo "round $r"
  if [ -n "${BASELINE_HEARTHD:-}" ]; then measure "  baseline $BASELINE_HEARTHD" "$BASELINE_HEARTHD"; fi
  measure "  hearth" "$hearthd"
done
