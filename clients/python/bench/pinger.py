"""Pings a daemon back to back on one connection for a while, then prints how long each ping waited
(n, p50, p99, max): how long any other client waits while a load runs. Used by the PostgreSQL benches
(pg_write_reads.sh, pg_rule_reads.sh).

    python3 pinger.py PORT SECONDS
"""
import socket
import sys
import time


def main() -> None:
    port, seconds = int(sys.argv[1]), float(sys.argv[2])
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    f = s.makefile("rb")
    xs: list[float] = []
    end = time.time() + seconds
    while time.time() < end:
        t = time.perf_counter()
        s.sendall(b'{"op":"ping"}\n')
        f.readline()
        xs.append((time.perf_counter() - t) * 1000)
    xs.sort()
    print(f"pings n={len(xs)} p50 {xs[len(xs) // 2]:.2f} p99 {xs[int(len(xs) * .99)]:.2f} max {xs[-1]:.2f} ms")


if __name__ == "__main__":
    main()
