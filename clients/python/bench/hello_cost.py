"""Daemon CPU per hello: N hellos pipelined (batches of 100) on 10 connections, hearthd's CPU read from
/proc/<pid>/stat before and after.

    python3 clients/python/bench/hello_cost.py PORT PID N ping
    python3 clients/python/bench/hello_cost.py PORT PID N token FILE       # a file holding a JWT
    python3 clients/python/bench/hello_cost.py PORT PID N admin FILE       # the --admin-key-file

Start hearthd with --auth-secret-file / --auth-jwks / --admin-key-file as the hellos need.
"""

import json
import os
import socket
import sys
import threading
import time


def main() -> None:
    port, pid, n, kind = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    if kind == "ping":
        line = '{"op":"ping"}'
    else:
        secret = open(sys.argv[5]).read().rstrip("\n")
        line = json.dumps({"op": "hello", ("token" if kind == "token" else "adminKey"): secret})
    payload = ((line + "\n") * 100).encode()

    def cpu() -> float:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def worker(count: int) -> None:
        s = socket.create_connection(("127.0.0.1", port))
        f = s.makefile("rb")
        for _ in range(0, count, 100):
            s.sendall(payload)
            for _ in range(100):
                r = f.readline()
                if b'"ok":true' not in r:
                    raise SystemExit(f"refused: {r.decode().strip()}")
        s.close()

    conns = 10
    c0, t0 = cpu(), time.time()
    threads = [threading.Thread(target=worker, args=(n // conns,)) for _ in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c1, t1 = cpu(), time.time()
    print(f"{kind}: {n} hellos in {t1 - t0:.2f} s, daemon CPU {1e6 * (c1 - c0) / n:.1f} us each")


if __name__ == "__main__":
    main()
