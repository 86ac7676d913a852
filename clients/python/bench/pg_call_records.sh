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
bin=/usr/lib/postgresql/15/bin
port=${PG_PORT:-25432}   # below the ephemeral range (32768-60999), which client sockets of the benches use
dir=$(mktemp -d /tmp/hearth-pg-XXXXXX)
chown postgres "$dir"
as_pg() { runuser -u postgres -- "$@"; }
cleanup() { as_pg "$bin/pg_ctl" -D "$dir/data" -m fast stop > /dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT
as_pg "$bin/initdb" -D "$dir/data" -A trust -U postgres > /dev/null
# A cluster stopped a moment ago (the previous run's) can still hold the port: try again, saying why.
for attempt in 1 2 3 4 5; do
  if as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c shared_buffers=256MB -c max_connections=200" start > /dev/null; then
    break
  fi
  echo "pg_call_records.sh: PostgreSQL did not start (attempt $attempt); its log says:" >&2
  tail -n 3 "$dir/log" >&2 || true
  [ "$attempt" -lt 5 ] || exit 1
  sleep 2
done
psql_() { as_pg psql -q -h 127.0.0.1 -p "$port" -U postgres -v ON_ERROR_STOP=1 "$@"; }
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
