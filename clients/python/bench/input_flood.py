"""What a flood of unfinished request lines does to the daemon (docs/benchmarks.md, "Budgets under abuse").

    python3 clients/python/bench/input_flood.py --port 7411 --pid <hearthd pid>

1. `--flooders` connections (default 40) each send `--line-mb` MiB (default 15) of one request line and never
   its newline. The daemon's resident memory is read from /proc before and after, and a legitimate client
   runs gets throughout (their latency is printed).
2. `--slowloris` connections (default 1000) each send one byte a second of an unfinished line; after
   `--wait` seconds (default: a little over the daemon's line timeout, --line-timeout-ms) the script counts
   how many the daemon has closed, while the legitimate client keeps running gets.

Run the daemon with the budgets to test, e.g. `hearthd --input-budget 268435456 --line-timeout-ms 5000`.
Loopback only; it stops by itself.
"""
import argparse, json, socket, sys, threading, time


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else 0.0


class Legit(threading.Thread):
    """Gets back to back on one connection, recording round trips (ms) and failures."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.s = connect(port)
        self.f = self.s.makefile("rb")
        self.samples, self.failures, self.stop = [], 0, False
        self.s.sendall(b'{"op":"set","path":"legit/doc","data":{"n":1}}\n')
        self.f.readline()

    def run(self):
        while not self.stop:
            t = time.perf_counter()
            self.s.sendall(b'{"op":"get","path":"legit/doc"}\n')
            line = self.f.readline()
            if not line.startswith(b'{"ok":true'):
                self.failures += 1
            self.samples.append((time.perf_counter() - t) * 1000)
            time.sleep(0.001)

    def report(self, label):
        xs, self.samples = self.samples, []
        print(f"  legitimate gets during {label}: n={len(xs)} p50 {pct(xs, .5):.2f} ms  p99 {pct(xs, .99):.2f} ms  "
              f"max {max(xs, default=0):.2f} ms  failures {self.failures}")


def closed(sock):
    sock.setblocking(False)
    try:
        data = sock.recv(65536)
        return data == b"" or b'"ok":false' in data
    except BlockingIOError:
        return False
    except OSError:
        return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=7411)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--flooders", type=int, default=40)
    ap.add_argument("--line-mb", type=int, default=15)
    ap.add_argument("--slowloris", type=int, default=1000)
    ap.add_argument("--wait", type=float, default=7.0)
    a = ap.parse_args()

    legit = Legit(a.port)
    legit.start()
    time.sleep(0.5)
    before = rss_kb(a.pid)
    chunk = b'{"op":"set","path":"flood/x","data":{"s":"' + b"x" * (1 << 20)
    refused = 0
    socks = []
    for i in range(a.flooders):
        s = connect(a.port)
        socks.append(s)
        try:
            s.sendall(chunk)
            for _ in range(a.line_mb - 1):
                s.sendall(b"x" * (1 << 20))
        except OSError:
            refused += 1
    time.sleep(1.0)
    after = rss_kb(a.pid)
    still_open = sum(1 for s in socks if not closed(s))
    print(f"{a.flooders} connections x {a.line_mb} MiB unfinished lines: resident memory {before // 1024} MiB -> "
          f"{after // 1024} MiB (+{(after - before) // 1024} MiB); {a.flooders - still_open} closed by the daemon, "
          f"{still_open} still open")
    legit.report("the flood")
    for s in socks:
        s.close()

    lor = []
    for i in range(a.slowloris):
        try:
            lor.append(connect(a.port))
        except OSError:
            break
    start = time.time()
    while time.time() - start < a.wait:
        for s in lor:
            try:
                s.send(b"{")
            except OSError:
                pass
        time.sleep(1.0)
    gone = sum(1 for s in lor if closed(s))
    print(f"{len(lor)} slowloris connections (one byte a second) after {a.wait:.0f} s: {gone} closed by the daemon")
    legit.report("the slowloris run")
    legit.stop = True
    legit.join()
    for s in lor:
        s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
