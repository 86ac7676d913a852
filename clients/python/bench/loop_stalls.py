#!/usr/bin/env python3
"""How long one request holds every other client (docs/benchmarks.md, "One request against every client").

Starts hearthd (HEARTHD, default .build/release/hearthd) on a fresh data directory for each case, runs a
"victim" connection that pings back to back in another process, sends one request, and prints the victim's
worst ping (the event loop's longest hold) and the daemon's RSS before and after:

    python3 clients/python/bench/loop_stalls.py [case ...]     (cases: and, deletes, commit, rules, pipelined, refill,
                                                                 refill_reads)

VICTIM=get makes the victim `get` one cached document instead (victim/v, written first), VICTIM=set `set`
one of ten documents (victim/v0..v9): what a client reading or writing data waits, beside the loop's hold.

Standard library only; binds 127.0.0.1 (PORT, default 7491).
"""

import json
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

PORT = int(os.environ.get("PORT", "7491"))
HEARTHD = os.environ.get("HEARTHD", ".build/release/hearthd")


def connect():
    s = socket.create_connection(("127.0.0.1", PORT), timeout=300)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s, s.makefile("rb")


def call(c, obj):
    c[0].sendall(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
    line = c[1].readline()
    return json.loads(line) if line else None


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


VICTIM = os.environ.get("VICTIM", "ping")


def _victim(started, stop, out):
    c = connect()
    worst = 0.0
    if VICTIM == "get":
        assert call(c, {"op": "set", "path": "victim/v", "data": {"n": 0}})["ok"]
        assert call(c, {"op": "get", "path": "victim/v"})["ok"]
    started.set()
    i = 0
    while not stop.is_set():
        i += 1
        request = {"op": "ping"}
        if VICTIM == "get":
            request = {"op": "get", "path": "victim/v"}
        elif VICTIM == "set":
            request = {"op": "set", "path": f"victim/v{i % 10}", "data": {"n": i}}
        t = time.perf_counter()
        answer = call(c, request)
        worst = max(worst, time.perf_counter() - t)
        assert answer and answer.get("ok"), answer
    out.send(worst)


class Daemon:
    def __init__(self, *extra):
        self.dir = tempfile.mkdtemp(prefix="hearth-stalls-")
        self.p = subprocess.Popen([HEARTHD, "--host", "127.0.0.1", "--port", str(PORT), "--data-dir", self.dir + "/data",
                                   "--quiet", *extra])
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", PORT)).close()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("hearthd did not start")

    def close(self):
        self.p.terminate()
        self.p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def measure(d, label, request):
    """Runs `request()` while the victim pings; prints the worst ping and the RSS."""
    before = rss_mib(d.p.pid)
    started, stop = multiprocessing.Event(), multiprocessing.Event()
    receive, send = multiprocessing.Pipe(duplex=False)
    v = multiprocessing.Process(target=_victim, args=(started, stop, send))
    v.start()
    started.wait()
    time.sleep(0.2)
    t = time.perf_counter()
    answer = request()
    took = time.perf_counter() - t
    time.sleep(0.1)
    stop.set()
    worst = receive.recv()
    v.join()
    ok = answer if isinstance(answer, str) else ("ok" if answer and answer.get("ok") else f"error {answer}")
    print(f"{label:<58} request {took * 1000:8.1f} ms   worst {VICTIM} {worst * 1000:8.1f} ms   "
          f"RSS {before} -> {rss_mib(d.p.pid)} MiB   {ok[:60]}", flush=True)


def load(c, collection, n, make, batch=5000):
    for s in range(0, n, batch):
        r = call(c, {"op": "commit", "writes": [{"op": "set", "path": f"{collection}/d{i:07d}", "data": make(i)}
                                                for i in range(s, min(n, s + batch))]})
        assert r["ok"], r


def listen_and_drain(query):
    """A listener on `query` that takes its first snapshot, then reads every pushed line from a thread."""
    listener = connect()
    assert call(listener, {"op": "listen", "query": query})["ok"]
    listener[1].readline()
    threading.Thread(target=lambda: [None for _ in iter(listener[1].readline, b"")], daemon=True).start()


def case_and():
    # Queries hold at most 100 field filters now: these are refused at validation (the case measures that).
    d = Daemon()
    try:
        c = connect()
        load(c, "c", 100, lambda i: {"a": 1})
        for n in (20000, 200000):
            q = {"collection": "c", "where": [["a", "==", 1]] * n}
            measure(d, f"listen with an AND of {n:,} filters", lambda: call(connect(), {"op": "listen", "query": q}))
    finally:
        d.close()


def case_deletes():
    d = Daemon()
    try:
        c = connect()
        n = 150000

        def key(i):   # the shortest distinct names, so 150,000 fields fit a document's 1 MiB
            s, i = "", i + 1
            while i:
                i, r = divmod(i - 1, 52)
                s += "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[r]
            return s
        keys = [key(i) for i in range(n)]
        assert call(c, {"op": "set", "path": "w/a", "data": {k: None for k in keys}})["ok"]
        measure(d, f"update deleting {n:,} fields", lambda: call(c, {"op": "update", "path": "w/a",
                                                                       "data": {k: {"$delete": True} for k in keys}}))
    finally:
        d.close()


def case_commit():
    d = Daemon()
    try:
        c = connect()
        load(c, "big", 100000, lambda i: {"n": i, "m": 0})
        listen_and_drain({"collection": "big", "where": [["n", ">=", 0]]})
        w = 5000
        measure(d, f"commit of {w:,} updates moving documents, 1 listener of 100,000",
                lambda: call(c, {"op": "commit", "writes": [{"op": "update", "path": f"big/d{i:07d}", "data": {"n": 200000 - i}}
                                                            for i in range(w)]}))
        measure(d, f"commit of {w:,} updates in place, 1 listener of 100,000",
                lambda: call(c, {"op": "commit", "writes": [{"op": "update", "path": f"big/d{i:07d}", "data": {"m": 1}}
                                                            for i in range(50000, 50000 + w)]}))
        measure(d, f"commit of {w:,} deletes, 1 listener of 100,000",
                lambda: call(c, {"op": "commit", "writes": [{"op": "delete", "path": f"big/d{i:07d}"}
                                                            for i in range(20000, 20000 + w)]}))
    finally:
        d.close()


def case_rules():
    rules = tempfile.NamedTemporaryFile("w", suffix=".rules", delete=False)
    rules.write("""rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /profiles/{id} {
      allow read, create: if true;
      allow update: if request.resource.data.diff(resource.data).affectedKeys().hasOnly(['name', 'bio']);
    }
  }
}
""")
    rules.close()
    d = Daemon("--rules", rules.name)
    try:
        c = connect()
        assert call(c, {"op": "set", "path": "profiles/p", "data": {"name": "a"}})["ok"]
        n = 20000
        measure(d, f"update of {n:,} fields judged by affectedKeys().hasOnly",
                lambda: call(c, {"op": "update", "path": "profiles/p", "data": {f"k{i}": 1 for i in range(n)}}).get("error", {}).get("code", "ok"))
    finally:
        d.close()
        os.unlink(rules.name)


REFILL_QUERY = {"collection": "big", "where": [["a", "==", 1], ["b", "==", 1]]}


def refill_window(c, n, matching):
    # n documents with a == 1; the last `matching` also have b == 1. The window `a == 1 && b == 1, limit 20` has
    # no exact plan (one single-field index scanned, the other filter checked per document): when one of its
    # rows is deleted, its refill scans a's n entries to find the next match.
    load(c, "big", n, lambda i: {"a": 1, "b": 1 if i >= n - matching else 0})
    listen_and_drain(dict(REFILL_QUERY, limit=20))


def case_refill():
    d = Daemon()
    try:
        c = connect()
        n = 200000
        refill_window(c, n, 21)
        measure(d, f"delete of a row of a non-exact limit-20 window over {n:,}",
                lambda: call(c, {"op": "delete", "path": f"big/d{n - 21:07d}"}))
    finally:
        d.close()


def case_refill_reads():
    # The refill of case_refill while four clients keep the readers busy with slow queries: how long does an
    # unrelated `set`, sent right behind the delete, wait? (The batch holding the delete waits for the refill;
    # a refill queued behind the clients' reads would make every write wait for them.)
    d = Daemon()
    try:
        c = connect()
        n = 60000
        refill_window(c, n, 200)
        q = REFILL_QUERY
        stop = threading.Event()
        querying = threading.Barrier(5)   # the four clients have each had a query answered

        def hammer():
            h = connect()
            call(h, dict(q, op="query", limit=150))
            querying.wait()
            while not stop.is_set():
                call(h, dict(q, op="query", limit=150))
        threads = [threading.Thread(target=hammer, daemon=True) for _ in range(4)]
        for t in threads:
            t.start()
        querying.wait()
        w, v = connect(), connect()
        for trial in range(1, 4):
            t = time.perf_counter()
            call(v, {"op": "set", "path": "v/x", "data": {"i": trial}})
            alone = time.perf_counter() - t
            w[0].sendall(json.dumps({"op": "delete", "path": f"big/d{n - 200 + trial:07d}"}).encode() + b"\n")
            # Once the daemon holds the delete (pending while its window's refill is read), the set follows it.
            while call(v, {"op": "stats"})["queues"]["pendingCommits"] == 0:
                pass
            t = time.perf_counter()
            call(v, {"op": "set", "path": "v/y", "data": {"i": trial}})
            behind = time.perf_counter() - t
            w[1].readline()
            print(f"an unrelated set alone {alone * 1000:7.1f} ms, right behind a window-row delete {behind * 1000:7.1f} ms", flush=True)
        stop.set()
    finally:
        d.close()


def case_pipelined():
    d = Daemon()
    try:
        c = connect()
        load(c, "big", 100000, lambda i: {"a": i % 10, "n": i, "name": f"user {i}"})
        a = connect()
        a[0].setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)

        def pipeline():
            a[0].sendall(b"".join(json.dumps({"op": "query", "collection": "big", "id": i}).encode() + b"\n" for i in range(120)))
            time.sleep(10)   # the client does not read: what does the daemon hold meanwhile?
            return "120 queries of 17 MB answers sent, none read for 10 s"
        measure(d, "120 pipelined queries, answers unread", pipeline)
    finally:
        d.close()


CASES = {"and": case_and, "deletes": case_deletes, "commit": case_commit, "rules": case_rules, "pipelined": case_pipelined,
         "refill": case_refill, "refill_reads": case_refill_reads}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(CASES):
        CASES[name]()
