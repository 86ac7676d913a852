#!/bin/bash
# The PostgreSQL peer of `hearth bench query` (docs/benchmarks.md, issue: reads on every core): the same call
# records in a jsonb table with an expression index on (customerId, callDate desc), and the same query,
# `where customerId = X order by callDate desc limit 20` for a random customer, from pgbench.
#
#   clients/python/bench/pg_call_records.sh [records] [customers] [clients] [seconds]   (defaults 100000 1000 50 10)
#
# Starts a throwaway PostgreSQL 15 cluster on 127.0.0.1 (Debian's postgresql-15; initdb runs as the postgres
# user, which it requires), loads the records (~300 bytes each: customerId, callDate, duration, direction,
# a 150-character notes field, as clients/python/bench/call_records.py writes them), runs pgbench with
# -c clients -j 2, prints its summary, and removes the cluster.
set -euo pipefail
records=${1:-100000}; customers=${2:-1000}; clients=${3:-50}; seconds=${4:-10}
port=${PG_PORT:-25432}   # below the ephemeral range (32768-60999), which client sockets of the benches use
pg_name=pg_call_records.sh
# shellcheck source=pg_cluster.sh
. "$(dirname "$0")/pg_cluster.sh"
psql_ -c "create table call_records (id text primary key, doc jsonb not null)"
psql_ -c "insert into call_records
  select 'r' || lpad(i::text, 8, '0'), jsonb_build_object(
    'customerId', 'c' || lpad(((hashint4(i) & 2147483647) % $customers)::text, 5, '0'),
    'callDate', to_char(timestamp '2026-01-01' + ((hashint4(-i) & 2147483647) % (300 * 86400)) * interval '1 second', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
    'duration', 1 + ((hashint4(i + 7) & 2147483647) % 3600),
    'direction', case when i % 2 = 0 then 'in' else 'out' end,
    'notes', repeat('x', 150))
  from generate_series(0, $records - 1) as i"
psql_ -c "create index call_records_customer_date on call_records ((doc->>'customerId'), (doc->>'callDate') desc)"
psql_ -c "vacuum analyze call_records"
cat > "$dir/query.sql" <<SQL
\set c random(0, $customers - 1)
select doc from call_records where doc->>'customerId' = 'c' || lpad(:c::text, 5, '0') order by doc->>'callDate' desc limit 20;
SQL
chown postgres "$dir/query.sql"
as_pg pgbench -n -h 127.0.0.1 -p "$port" -U postgres -c "$clients" -j 2 -T "$seconds" -f "$dir/query.sql" postgres
