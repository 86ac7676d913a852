"""How long writes pause when the committer of three hearthd nodes is killed, then when the next one is
frozen (docs/benchmarks.md, "Several nodes"). One client writes through a follower in a closed loop (each
write waits for its answer, a failed one is retried at once); for each event the pause is the time from the
event to the next acknowledged write, and the writes answered "unavailable" meanwhile are counted.

    python3 clients/python/bench/cluster_failover.py DSN [lease_ms] [rounds]    (defaults 5000 3)

DSN: a PostgreSQL to use (Tests/Postgres/cluster.sh start DIR prints one); each round uses a fresh schema.
Needs a release build (make release)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HEARTHD = os.path.join(ROOT, ".build", "release", "hearthd")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def request(port: int, line: dict, timeout: float = 30) -> dict:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall((json.dumps(line) + "\n").encode())
        f = s.makefile()
        return json.loads(f.readline())


def role(port: int) -> str:
    try:
        return request(port, {"op": "stats"}, timeout=2).get("cluster", {}).get("role", "?")
    except OSError:
        return "down"


def main() -> None:
    dsn = sys.argv[1]
    lease = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    for r in range(rounds):
        schema = "failover_" + uuid.uuid4().hex[:8]
        ports = [free_port() for _ in range(3)]
        procs = []
        dirs = []
        for i, p in enumerate(ports):
            d = tempfile.mkdtemp(prefix="hearth-failover-")
            dirs.append(d)
            procs.append(subprocess.Popen([HEARTHD, "--port", str(p), "--advertise", f"127.0.0.1:{p}", "--node-name", f"n{i}",
                                           "--data-dir", d, "--quiet", "--postgres", dsn, "--postgres-schema", schema,
                                           "--lease-ms", str(lease)], stderr=subprocess.DEVNULL))
            for _ in range(100):
                if role(p) in ("committer", "follower"):
                    break
                time.sleep(0.05)
        committer = next(i for i, p in enumerate(ports) if role(p) == "committer")
        acked: list[float] = []
        failed: list[float] = []
        stop = threading.Event()
        through = [[i for i in range(3) if i != committer][1]]   # a follower, moved off a node about to be frozen

        def writer() -> None:
            n = 0
            current = -1
            while not stop.is_set():
                if current != through[0]:
                    current = through[0]
                    conn = socket.create_connection(("127.0.0.1", ports[current]))
                    f = conn.makefile()
                n += 1
                conn.sendall((json.dumps({"op": "set", "path": "f/x", "data": {"n": n}}) + "\n").encode())
                answer = json.loads(f.readline())
                (acked if answer.get("ok") else failed).append(time.monotonic())
        t = threading.Thread(target=writer)
        t.start()
        time.sleep(2)

        def pause(event: float) -> tuple[float, int]:
            """The longest gap between acknowledgements in the 2 leases + 1 s after the event (writes in flight
            at the event may still be acknowledged just after it), and the failures in that window."""
            end = event + 2 * lease / 1000 + 1
            while time.monotonic() < end:
                time.sleep(0.05)
            window = [a for a in acked if a >= event - 0.001 and a <= end]
            points = [event] + window + [end]
            gap = max(b - a for a, b in zip(points, points[1:]))
            return gap, sum(1 for x in failed if event <= x <= end)
        killed_at = time.monotonic()
        procs[committer].send_signal(signal.SIGKILL)
        kill_pause, kill_failed = pause(killed_at)
        time.sleep(1)
        second = next(i for i in range(3) if i != committer and role(ports[i]) == "committer")
        through[0] = next(i for i in range(3) if i not in (committer, second))
        time.sleep(0.5)   # the writer is on the last node
        frozen_at = time.monotonic()
        procs[second].send_signal(signal.SIGSTOP)
        stop_pause, stop_failed = pause(frozen_at)
        procs[second].send_signal(signal.SIGCONT)
        time.sleep(1)
        stop.set()
        t.join()
        rate = sum(1 for a in acked if a < killed_at) / 2
        print(f"round {r + 1}: lease {lease} ms, writes through a follower at ~{rate:.0f}/s; committer n{committer} SIGKILL: "
              f"writes paused {kill_pause * 1000:.0f} ms ({kill_failed} answered unavailable); next committer n{second} "
              f"SIGSTOP: paused {stop_pause * 1000:.0f} ms ({stop_failed} unavailable)", flush=True)
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait()
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
