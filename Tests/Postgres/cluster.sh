#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster on loopback for the test suite (and for trying the PostgreSQL backend).
#   Tests/Postgres/cluster.sh start DIR   initdb into DIR (as the postgres user: initdb refuses root), start it
#                                         on a free port with its socket in DIR, print the libpq DSN
#   Tests/Postgres/cluster.sh stop DIR    stop it (fast shutdown) and remove DIR
#   Tests/Postgres/cluster.sh halt DIR    stop it, keeping DIR (as an operator's restart would)
#   Tests/Postgres/cluster.sh resume DIR  start a halted cluster again on the same port
# Nothing outside DIR is touched; the server listens on 127.0.0.1 and on DIR's socket only.
set -euo pipefail
cmd=${1:?usage: cluster.sh start|stop|halt|resume DIR}
dir=${2:?usage: cluster.sh start|stop|halt|resume DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
[ -x "$bin/initdb" ] || { echo "cluster.sh: no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql-15)" >&2; exit 1; }
# The server must not inherit this script's caller's descriptors beyond 0-2 (a test harness's pipes: the
# caller would wait for their end as long as PostgreSQL runs).
for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-" 2>/dev/null; done
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
run_server() {
  as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-k '$dir' -p $1 -c listen_addresses=127.0.0.1 -c fsync=on -c shared_buffers=128MB -c max_connections=300" \
    start >/dev/null 2>&1
}
case $cmd in
start)
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres "$dir"
  as_pg "$bin/initdb" -D "$dir/data" -U hearth --auth=trust -E UTF8 --locale=C.UTF-8 --data-checksums >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  # A free port: ask the kernel for one, then let PostgreSQL take it (a race with another process is retried).
  for attempt in 1 2 3 4 5; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
    if run_server "$port"; then
      echo "$port" >"$dir/port"
      echo "host=127.0.0.1 port=$port user=hearth dbname=postgres"
      exit 0
    fi
  done
  cat "$dir/server.log" >&2
  exit 1 ;;
stop)
  if [ -f "$dir/data/postmaster.pid" ]; then as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 || true; fi
  rm -rf "$dir" ;;
halt)
  as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null ;;
resume)
  run_server "$(cat "$dir/port")" || { tail -20 "$dir/server.log" >&2; exit 1; } ;;
*) echo "usage: cluster.sh start|stop|halt|resume DIR" >&2; exit 2 ;;
esac
