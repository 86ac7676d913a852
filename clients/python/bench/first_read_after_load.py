#!/usr/bin/env python3
"""The first index read after a bulk load (docs/benchmarks.md, "The first read after a bulk load").

Declares the call-records index, writes --records documents in commits of 500 with 8 in flight as fast as the
daemon takes them, then, while the embedded store's applier still holds part of the load in its backlog (read
from `stats`), runs the call-records query (`explain`, so the server's own time is reported) --reads times and
prints each one's server time. The first read merges the whole backlog; the later ones reuse what it built.
With `--wide`, the query is the newest 20 records of all customers (`orderBy callDate desc limit 20`), a range
every pending commit touches. With `--count`, each read is a `count` of the whole collection, timed on the
client (a count is not `explain`ed).

    python3 clients/python/bench/first_read_after_load.py --port P [--records 100000] [--reads 5] [--wide | --count]
"""
import argparse, json, random, socket, time

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--records", type=int, default=100_000)
ap.add_argument("--reads", type=int, default=5)
ap.add_argument("--wide", action="store_true", help="the newest 20 of all customers instead of one customer's")
ap.add_argument("--count", action="store_true", help="count the whole collection instead")
a = ap.parse_args()
s = socket.create_connection(("127.0.0.1", a.port))
f = s.makefile("rb")


def call(o):
    s.sendall((json.dumps(o) + "\n").encode())
    return json.loads(f.readline())


call({"op": "index", "action": "create", "collection": "cr", "fields": [["customerId", "asc"], ["callDate", "desc"]]})
rng = random.Random(7)
base = 1_767_225_600  # 2026-01-01
t0, inflight = time.time(), 0
for start in range(0, a.records, 500):
    writes = [{"op": "set", "path": "cr/r%08d" % i, "data": {
        "customerId": "c%05d" % rng.randrange(1000),
        "callDate": {"$timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(base + rng.randrange(0, 300 * 86400)))},
        "notes": "x" * 150}} for i in range(start, min(start + 500, a.records))]
    s.sendall((json.dumps({"op": "commit", "writes": writes}) + "\n").encode())
    inflight += 1
    while inflight >= 8:
        r = json.loads(f.readline())
        inflight -= 1
        if not r.get("ok"):
            raise SystemExit("load failed: %s" % r)
while inflight:
    json.loads(f.readline())
    inflight -= 1
backlog = (call({"op": "stats"}).get("store", {}).get("applier") or {}).get("backlogCommits")
print("loaded %d records in %.1f s; applier backlog %s commits" % (a.records, time.time() - t0, backlog))
for k in range(a.reads):
    t = time.time()
    if a.count:
        r = call({"op": "count", "collection": "cr"})
        print("read %d: count %s, wall %.1f ms" % (k + 1, r.get("count"), (time.time() - t) * 1000))
        continue
    q = {"op": "explain", "collection": "cr", "orderBy": [["callDate", "desc"]], "limit": 20}
    if not a.wide:
        q["where"] = [["customerId", "==", "c%05d" % rng.randrange(1000)]]
    r = call(q)
    print("read %d: server %.1f ms, wall %.1f ms" % (k + 1, r["plan"]["micros"] / 1000, (time.time() - t) * 1000))
