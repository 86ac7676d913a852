#!/usr/bin/env python3
"""Get latency while a large admin job runs: a 100,000-document recursive delete, then a compaction.

    python3 clients/python/bench/admin_stall.py [documents] [batchSize]      (release build: swift build -c release)

Starts a daemon on a fresh data dir, loads `documents` 300-byte documents under big/root/items (commits of 500),
then runs `hearth bench get --rate 2000 -c 10` (its own 10,000 keys) three times: alone, while
{"op":"deleteRecursive","path":"big"} runs, and while {"op":"compact"} runs. Prints each run's p50/p99/max
get latency and the job's duration.
"""
import json, os, socket, subprocess, sys, tempfile, threading, time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
BATCH = int(sys.argv[2]) if len(sys.argv) > 2 else 500
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
B = os.environ.get("HEARTH_BUILD", os.path.join(ROOT, ".build", "release"))
d = tempfile.mkdtemp()
log = open(os.path.join(d, "log"), "w+")
daemon = subprocess.Popen([f"{B}/hearthd", "--port", "0", "--data-dir", os.path.join(d, "data")], stderr=log)
port = None
for _ in range(200):
    log.seek(0)
    text = log.read()
    if "listening on 127.0.0.1:" in text:
        port = int(text.split("listening on 127.0.0.1:")[1].split(",")[0])
        break
    time.sleep(0.05)

def call(line, timeout=3600):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall((json.dumps(line) + "\n").encode())
    buf = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            raise RuntimeError("closed")
        buf += chunk
        while b"\n" in buf:
            l, buf = buf.split(b"\n", 1)
            o = json.loads(l)
            if "ok" in o:
                s.close()
                return o

pad = "x" * 250
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rwb")
t0 = time.time()
for start in range(0, N, 500):
    writes = [{"op": "set", "path": f"big/root/items/d{i:07d}", "data": {"n": i, "pad": pad}} for i in range(start, min(N, start + 500))]
    f.write((json.dumps({"op": "commit", "writes": writes}) + "\n").encode())
    f.flush()
    assert json.loads(f.readline()).get("ok"), "load failed"
print(f"loaded {N} documents in {time.time() - t0:.1f} s; store {call({'op': 'stats'})['store']['bytesOnDisk'] / 1048576:.1f} MiB")

def bench(label, job=None):
    result = {}
    def run_job():
        time.sleep(2.0)   # after bench get has loaded its keys and started measuring
        t = time.time()
        result["answer"] = call(job)
        result["seconds"] = time.time() - t
    th = threading.Thread(target=run_job) if job else None
    if th:
        th.start()
    out = subprocess.run([f"{B}/hearth", "bench", "get", "--port", str(port), "-c", "10", "--rate", "2000", "-d", "8", "--json"],
                         capture_output=True, text=True, check=True)
    if th:
        th.join()
    r = json.loads(out.stdout)
    lat = r["latency_us"]
    extra = f"; job {result['seconds']:.2f} s: {json.dumps({k: v for k, v in result['answer'].items() if k not in ('ok', 'id')})}" if job else ""
    print(f"{label:28} {r['ops_per_sec']:>7.0f} gets/s  p50 {lat['p50']} us  p99 {lat['p99']} us  max {lat['max']} us{extra}")

bench("gets alone")
bench(f"gets during recursive delete", {"op": "deleteRecursive", "path": "big", "batchSize": BATCH})
bench("gets during compaction", {"op": "compact"})
daemon.terminate()
daemon.wait()
