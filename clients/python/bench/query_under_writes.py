"""One connection's query (or listen) latency while other connections write (docs/benchmarks.md,
"Queries under writes").

    hearth bench set --port 7411 --connections 20 --duration 10 &      # the writers
    python3 clients/python/bench/query_under_writes.py --port 7411 --seconds 6 [--listen]

Loads 200 small documents into `qw` (field c = i % 10), then runs `where c == 3 limit 20` back to back for
`--seconds` and prints the count and p50/p99 latency. With `--listen`, each round is a `listen` on that query
until its first snapshot arrives, then an `unlisten`; the latency is listen to first snapshot. Loopback only.
"""
import argparse, json, socket, sys, time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=7411)
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--listen", action="store_true", help="time listen -> first snapshot instead of a query")
    a = ap.parse_args()
    s = socket.create_connection(("127.0.0.1", a.port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    f = s.makefile("rb")

    def request(o):
        s.sendall((json.dumps(o) + "\n").encode())
        return json.loads(f.readline())

    r = request({"op": "commit", "writes": [{"op": "set", "path": f"qw/r{i}", "data": {"c": i % 10, "d": i}} for i in range(200)]})
    if not r.get("ok"):
        print(r)
        return 1
    latencies = []
    query = {"collection": "qw", "where": [["c", "==", 3]], "limit": 20}
    end = time.time() + a.seconds
    while time.time() < end:
        t = time.perf_counter()
        if a.listen:
            r = request({"op": "listen", "query": query})
            first = json.loads(f.readline())
            latencies.append(time.perf_counter() - t)
            if not r.get("ok") or first.get("size") != 20:
                print(r, first)
                return 1
            request({"op": "unlisten", "sub": r["sub"]})
            continue
        r = request({"op": "query", **query})
        latencies.append(time.perf_counter() - t)
        if not r.get("ok") or len(r["docs"]) != 20:
            print(r)
            return 1
    latencies.sort()
    print(f"{'listens' if a.listen else 'queries'} {len(latencies)}: p50 {latencies[len(latencies) // 2] * 1000:.2f} ms, "
          f"p99 {latencies[int(len(latencies) * 0.99)] * 1000:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
