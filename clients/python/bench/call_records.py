"""Loads call records and measures the customer-screen query (docs/benchmarks.md).

    python3 clients/python/bench/call_records.py --records 1000000 --customers 10000 --port 7411

Loads `--records` documents into `call_records` (customerId over `--customers` values, callDate, duration,
direction, notes: ~300 bytes each) in commits of 500, declares the composite index
(customerId asc, callDate desc) and waits until it is ready, then runs `--samples` explain calls of
`where customerId == X orderBy callDate desc limit 20` for random X and prints the server time of the
execution (p50/p99, from explain's "micros"), the entries examined, the load rate, and the daemon's RSS and
data-dir size. Loopback only; bounded by --records and --samples.
"""
import argparse, json, os, random, socket, statistics, sys, time


def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s, s.makefile("rb")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=7411)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--customers", type=int, default=10_000)
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--skip-load", action="store_true")
    ap.add_argument("--pid", type=int, default=0, help="daemon pid, for RSS")
    ap.add_argument("--data-dir", default="", help="daemon data dir, for its size")
    a = ap.parse_args()
    s, f = connect(a.port)

    def call(obj):
        s.sendall((json.dumps(obj) + "\n").encode())
        r = json.loads(f.readline())
        if not r.get("ok"):
            raise SystemExit("error: %s" % r)
        return r

    rng = random.Random(7)
    if not a.skip_load:
        call({"op": "index", "action": "create", "collection": "call_records",
              "fields": [["customerId", "asc"], ["callDate", "desc"]]})
        t0 = time.time()
        batch, inflight, done = 500, 0, 0
        base = 1_767_225_600  # 2026-01-01
        notes = "x" * 150
        for start in range(0, a.records, batch):
            writes = []
            for i in range(start, min(start + batch, a.records)):
                ts = base + rng.randrange(0, 300 * 86400)
                writes.append({"op": "set", "path": "call_records/r%08d" % i, "data": {
                    "customerId": "c%05d" % rng.randrange(a.customers),
                    "callDate": {"$timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))},
                    "duration": rng.randrange(1, 3600), "direction": rng.choice(["in", "out"]), "notes": notes}})
            s.sendall((json.dumps({"op": "commit", "writes": writes}) + "\n").encode())
            inflight += 1
            while inflight >= 8:
                r = json.loads(f.readline()); inflight -= 1; done += 1
                if not r.get("ok"):
                    raise SystemExit("load failed: %s" % r)
            if start % 100_000 == 0:
                print("loaded %d" % start, file=sys.stderr)
        while inflight:
            json.loads(f.readline()); inflight -= 1
        load_s = time.time() - t0
        print("load: %d records in %.1fs (%.0f records/s)" % (a.records, load_s, a.records / load_s))
    while True:
        idx = call({"op": "index", "action": "list"})["indexes"]
        if all(i["state"] == "ready" for i in idx):
            break
        time.sleep(0.5)
    micros, examined = [], []
    for _ in range(a.samples):
        c = "c%05d" % rng.randrange(a.customers)
        r = call({"op": "explain", "collection": "call_records", "where": [["customerId", "==", c]],
                  "orderBy": [["callDate", "desc"]], "limit": 20})
        micros.append(r["plan"]["micros"]); examined.append(r["plan"]["examined"])
    micros.sort()
    q = lambda p: micros[min(len(micros) - 1, int(p * len(micros)))]
    print("query server time over %d samples: p50 %d us, p99 %d us, max %d us; examined mean %.1f"
          % (a.samples, q(0.50), q(0.99), micros[-1], statistics.mean(examined)))
    if a.pid:
        rss = [l for l in open("/proc/%d/status" % a.pid) if l.startswith("VmRSS")][0].split()[1]
        print("daemon RSS: %s kB" % rss)
    if a.data_dir:
        total = sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(a.data_dir) for n in ns)
        print("data dir: %.1f MB" % (total / 1e6))


if __name__ == "__main__":
    main()
