"""How long one large commit holds the daemon's event loop (docs/benchmarks.md, "Large commits").

    python3 clients/python/bench/commit_stall.py --port 7411 --writes 10000 --repeat 5

One connection pings every 0.5 ms; another sends `--repeat` commits of `--writes` sets to distinct feed
documents (`users/f<i>/user-feed/p<k>`: an owner and a server timestamp). For each commit it prints the time
until the acknowledgement and the worst ping round trip while the commit was being applied. Loopback only.
"""
import argparse, json, socket, sys, threading, time


def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s, s.makefile("rb")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=7411)
    ap.add_argument("--writes", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()

    pinger, pings = connect(a.port)
    state = {"stop": False, "worst": 0.0}

    def ping():
        while not state["stop"]:
            t = time.perf_counter()
            pinger.sendall(b'{"op":"ping"}\n')
            pings.readline()
            state["worst"] = max(state["worst"], time.perf_counter() - t)
            time.sleep(0.0005)

    thread = threading.Thread(target=ping)
    thread.start()
    writer, replies = connect(a.port)
    time.sleep(0.3)
    ok = True
    for k in range(a.repeat):
        writes = [{"op": "set", "path": f"users/f{i:06d}/user-feed/p{k}",
                   "data": {"ownerUid": "a", "timestamp": {"$serverTimestamp": True}}} for i in range(a.writes)]
        line = json.dumps({"op": "commit", "writes": writes}).encode() + b"\n"
        state["worst"] = 0.0
        t = time.perf_counter()
        writer.sendall(line)
        reply = json.loads(replies.readline())
        took = time.perf_counter() - t
        time.sleep(0.2)   # pings that were waiting behind the commit's acknowledgement come back
        ok = ok and reply.get("ok") is True
        print(f"{a.writes} writes ({len(line):,} bytes): acknowledged after {took * 1000:.1f} ms, "
              f"worst ping while it ran {state['worst'] * 1000:.1f} ms, ok={reply.get('ok')}")
    state["stop"] = True
    thread.join()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
