#!/bin/bash
# The PostgreSQL peer of `hearth bench set` (docs/benchmarks.md, "The write path"): the bench document
# (~300 bytes: active, email, name, pad, score, seq, tags) upserted by key into a jsonb table with one
# expression index per field (a GIN index for the `tags` array), as Hearth indexes every field, from pgbench
# with synchronous_commit=on (each commit fsynced before it is acknowledged, as Hearth's).
#
#   clients/python/bench/pg_set.sh [keys] [clients] [seconds]   (defaults 10000 50 10)
#
# Starts a throwaway PostgreSQL 15 cluster on 127.0.0.1 (Debian's postgresql-15; initdb runs as the postgres
# user, which it requires), loads the keys, runs pgbench -c clients -j 2, prints its summary, and removes the
# cluster.
set -euo pipefail
keys=${1:-10000}; clients=${2:-50}; seconds=${3:-10}
port=${PG_PORT:-25433}   # below the ephemeral range (32768-60999), which client sockets of the benches use
pg_name=pg_set.sh
pg_settings="-c synchronous_commit=on"
# shellcheck source=pg_cluster.sh
. "$(dirname "$0")/pg_cluster.sh"
# The table, its indexes, the keys and the upsert script.
# shellcheck source=pg_set_table.sh
. "$(dirname "$0")/pg_set_table.sh"
as_pg pgbench -n -h 127.0.0.1 -p "$port" -U postgres -c "$clients" -j 2 -T "$seconds" -f "$dir/set.sql" postgres
