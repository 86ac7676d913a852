# Sourced after pg_cluster.sh by the PostgreSQL peers of `hearth bench set` (pg_set.sh, postgres_store_set.sh):
# the bench document (~300 bytes: active, email, name, pad, score, seq, tags) in a jsonb table keyed by id,
# with one expression index per field (a GIN index for the `tags` array), as Hearth indexes every field;
# $keys rows loaded; and $dir/set.sql, the pgbench script upserting one random key.
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
