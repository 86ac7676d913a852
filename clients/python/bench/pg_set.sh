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
# The document hearth bench set writes: 300 bytes of JSON with the pad filling it up.
pad=$(printf 'x%.0s' $(seq 1 172))
psql_ -c "create table bench (id text primary key, doc jsonb not null)"
for field in active email name pad score seq; do
  psql_ -c "create index bench_$field on bench ((doc->'$field'))"
done
psql_ -c "create index bench_tags on bench using gin ((doc->'tags'))"
psql_ -c "insert into bench select 'k' || lpad(i::text, 4, '0'), jsonb_build_object('active', true,
  'email', 'user@example.com', 'name', 'Bench Document', 'pad', '$pad', 'score', 42.5, 'seq', i,
  'tags', jsonb_build_array('bench', 'load')) from generate_series(0, $keys - 1) as i"
psql_ -c "vacuum analyze bench"
cat > "$dir/set.sql" <<SQL
\set k random(0, $keys - 1)
\set n random(0, 999999999)
insert into bench values ('k' || lpad(:k::text, 4, '0'), jsonb_build_object('active', true,
  'email', 'user@example.com', 'name', 'Bench Document', 'pad', '$pad', 'score', 42.5, 'seq', :n,
  'tags', jsonb_build_array('bench', 'load'))) on conflict (id) do update set doc = excluded.doc;
SQL
chown postgres "$dir/set.sql"
as_pg pgbench -n -h 127.0.0.1 -p "$port" -U postgres -c "$clients" -j 2 -T "$seconds" -f "$dir/set.sql" postgres
