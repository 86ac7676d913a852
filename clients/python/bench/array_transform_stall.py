"""How long one large `$arrayUnion` / `$arrayRemove` holds the daemon's event loop (docs/benchmarks.md,
"Large array transforms").

    python3 clients/python/bench/array_transform_stall.py --port 7411 --existing 100000 --operands 20000

Sets `arr/a` to `{"a":[0, ..., existing-1]}`, then sends an update with `$arrayUnion` of `operands` new
integers (existing, ..., existing+operands-1) and, right behind it on another connection, a `ping`; prints
how long each took to be answered. Then the same with `$arrayRemove` of `operands` integers present in the
array. Loopback only.
"""
import argparse, json, socket, sys, time


def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s, s.makefile("rb")


def call(conn, message):
    sock, replies = conn
    sock.sendall(json.dumps(message, separators=(",", ":")).encode() + b"\n")
    return json.loads(replies.readline())


def stall(writer, pinger, name, update):
    line = json.dumps(update, separators=(",", ":")).encode() + b"\n"
    t = time.perf_counter()
    writer[0].sendall(line)
    time.sleep(0.05)   # let the update reach the loop first
    p = time.perf_counter()
    pinger[0].sendall(b'{"op":"ping"}\n')
    pinger[1].readline()
    ping = time.perf_counter() - p
    reply = json.loads(writer[1].readline())
    took = time.perf_counter() - t
    print(f"{name} ({len(line):,} bytes): acknowledged after {took * 1000:.1f} ms, "
          f"a ping sent 50 ms after it waited {ping * 1000:.1f} ms, ok={reply.get('ok')}")
    return reply.get("ok") is True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=7411)
    ap.add_argument("--existing", type=int, default=100_000)
    ap.add_argument("--operands", type=int, default=20_000)
    a = ap.parse_args()

    writer, pinger = connect(a.port), connect(a.port)
    reply = call(writer, {"op": "set", "path": "arr/a", "data": {"a": list(range(a.existing))}})
    if reply.get("ok") is not True:
        print(f"set failed: {reply}")
        return 1
    added = list(range(a.existing, a.existing + a.operands))
    ok = stall(writer, pinger, f"$arrayUnion of {a.operands:,} into {a.existing:,}",
               {"op": "update", "path": "arr/a", "data": {"a": {"$arrayUnion": added}}})
    removed = list(range(0, a.existing, max(1, a.existing // a.operands)))[:a.operands]
    ok = stall(writer, pinger, f"$arrayRemove of {len(removed):,} from {a.existing + a.operands:,}",
               {"op": "update", "path": "arr/a", "data": {"a": {"$arrayRemove": removed}}}) and ok
    doc = call(writer, {"op": "get", "path": "arr/a"})["doc"]
    print(f"final array: {len(doc['data']['a']):,} elements")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
