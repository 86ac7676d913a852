"""How long one heavy request holds other clients up (docs/benchmarks.md, "No request stalls everyone").

    python3 clients/python/bench/loop_stall.py --port 7411 --docs 200000

Loads `--docs` documents into collection `big` (skipped when it already holds them), then runs each heavy
request while another connection, in a process of its own, pings back to back, and prints the request's own time and the pings'
round trips while it ran (p50 / p99 / max):

- `count` of the whole collection;
- the full query (every document in one response);
- three full queries at once, on three connections;
- a `listen` on the whole collection, until its first snapshot has arrived (then `unlisten`);
- `$arrayUnion` of 20,000 new elements into a 100,000-element array, and `$arrayRemove` of 20,000.

Loopback only; it stops by itself.
"""
import argparse, json, multiprocessing, socket, sys, threading, time


def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s, s.makefile("rb")


def call(conn, obj):
    s, f = conn
    s.sendall(json.dumps(obj).encode() + b"\n")
    return json.loads(f.readline())


def load(port, n):
    c = connect(port)
    have = call(c, {"op": "count", "collection": "big"}).get("count", 0)
    if have >= n:
        return
    batch = 5000
    for start in range(have, n, batch):
        writes = [{"op": "set", "path": f"big/d{i:07d}", "data": {"n": i, "g": i % 10, "name": f"user {i}"}}
                  for i in range(start, min(start + batch, n))]
        r = call(c, {"op": "commit", "writes": writes})
        assert r.get("ok"), r


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else 0.0


def pinger(port, start, stop, out):
    """In a process of its own (the heavy request's client must not hold up the pings): pings back to back
    between `start` and `stop`, then sends the round trips."""
    c = connect(port)
    samples = []
    start.wait()
    while not stop.is_set():
        t = time.perf_counter()
        call(c, {"op": "ping"})
        samples.append(time.perf_counter() - t)
    out.send(samples)


def measure(port, label, heavy):
    """Runs `heavy()` while another process pings back to back; prints the figures."""
    start, stop = multiprocessing.Event(), multiprocessing.Event()
    recv, send = multiprocessing.Pipe(duplex=False)
    proc = multiprocessing.Process(target=pinger, args=(port, start, stop, send))
    proc.start()
    time.sleep(0.3)
    start.set()
    t = time.perf_counter()
    ok = heavy()
    took = time.perf_counter() - t
    stop.set()
    ms = [x * 1000 for x in recv.recv()]
    proc.join()
    print(f"{label:<48} {took * 1000:9.1f} ms   pings while it ran: n={len(ms):6d} "
          f"p50 {pct(ms, .5):6.2f}  p99 {pct(ms, .99):6.2f}  max {max(ms, default=0):8.2f} ms   ok={ok}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=7411)
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--array", type=int, default=100_000)
    ap.add_argument("--union", type=int, default=20_000)
    a = ap.parse_args()
    load(a.port, a.docs)
    print(f"{a.docs:,} documents in big")
    worker = connect(a.port)
    results = []
    results.append(measure(a.port, "count big", lambda: call(worker, {"op": "count", "collection": "big"}).get("ok")))
    results.append(measure(a.port, "query big (every document)",
                           lambda: call(worker, {"op": "query", "collection": "big"}).get("ok")))

    def three():
        conns = [connect(a.port) for _ in range(3)]
        out = [None] * 3

        def run(i):
            out[i] = call(conns[i], {"op": "query", "collection": "big"}).get("ok")
        ts = [threading.Thread(target=run, args=(i,)) for i in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return all(out)
    results.append(measure(a.port, "3 x query big at once", three))

    def listen():
        answer = call(worker, {"op": "listen", "query": {"collection": "big"}})
        if not answer.get("ok"):
            return False
        first = json.loads(worker[1].readline())
        call(worker, {"op": "unlisten", "sub": answer["sub"]})
        return first.get("size", 0) >= a.docs
    results.append(measure(a.port, "listen big (first snapshot)", listen))

    call(worker, {"op": "set", "path": "arr/a", "data": {"a": list(range(a.array))}})
    union = list(range(a.array, a.array + a.union))
    results.append(measure(a.port, f"$arrayUnion {a.union:,} into {a.array:,}",
                           lambda: call(worker, {"op": "update", "path": "arr/a",
                                                 "data": {"a": {"$arrayUnion": union}}}).get("ok")))
    results.append(measure(a.port, f"$arrayRemove {a.union:,} from {a.array + a.union:,}",
                           lambda: call(worker, {"op": "update", "path": "arr/a",
                                                 "data": {"a": {"$arrayRemove": union}}}).get("ok")))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
