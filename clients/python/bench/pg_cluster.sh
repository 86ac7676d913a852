# Sourced by the PostgreSQL peers of the benches (pg_call_records.sh, pg_set.sh): starts a throwaway
# PostgreSQL 15 cluster (Debian's postgresql-15) on 127.0.0.1, port $port, with any extra server settings in
# $pg_settings; initdb and the server run as the postgres user, which initdb requires. Defines `as_pg` and
# `psql_`, and `$dir` (removed, with the cluster stopped, when the script exits). Sets `$pg_name` to name the
# script in messages.
bin=/usr/lib/postgresql/15/bin
dir=$(mktemp -d /tmp/hearth-pg-XXXXXX)
chown postgres "$dir"
as_pg() { runuser -u postgres -- "$@"; }
cleanup() { as_pg "$bin/pg_ctl" -D "$dir/data" -m fast stop > /dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT
as_pg "$bin/initdb" -D "$dir/data" -A trust -U postgres > /dev/null
# A cluster stopped a moment ago (the previous run's) can still hold the port: try again, saying why.
for attempt in 1 2 3 4 5; do
  if as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c shared_buffers=256MB -c max_connections=200 ${pg_settings:-}" start > /dev/null; then
    break
  fi
  echo "${pg_name:-pg_cluster.sh}: PostgreSQL did not start (attempt $attempt); its log says:" >&2
  tail -n 3 "$dir/log" >&2 || true
  [ "$attempt" -lt 5 ] || exit 1
  sleep 2
done
psql_() { as_pg psql -q -h 127.0.0.1 -p "$port" -U postgres -v ON_ERROR_STOP=1 "$@"; }
# PostgreSQL's CPU so far, in clock ticks: every live process of this cluster (utime + stime) plus what the
# postmaster's children that already exited used (its cutime + cstime: sessions that ended before the count).
pg_ticks() {
  local pm; pm=$(head -1 "$dir/data/postmaster.pid")
  local live; live=$(awk '{s += $14 + $15} END {print s + 0}' $(for p in $pm $(pgrep -P "$pm"); do echo /proc/$p/stat; done) 2>/dev/null)
  local gone; gone=$(awk '{print $16 + $17}' /proc/$pm/stat)
  echo $((live + gone))
}
