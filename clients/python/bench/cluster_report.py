"""One line of cluster_bench.sh's report: a bench's JSON and each node's CPU ticks over the run. For listen,
`shares` is each node's number of listeners (the bench spreads them over --host in turn), so each node's CPU
is also given per delivery it made itself."""
import json
import sys

kind, label, out, ticks, hz = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4].split(), int(sys.argv[5])
shares = [int(x) for x in sys.argv[6].split()] if len(sys.argv) > 6 else []
pg = [int(t[3:]) / hz for t in ticks if t.startswith("pg:")]
cpu = [int(t) / hz for t in ticks if not t.startswith("pg:")]
pg_cpu = pg[0] if pg else 0.0
lat = out["latency_us"]
if kind == "set":
    n = out["requests"]
    per = "  ".join(f"n{i} {c / n * 1e6:.0f}" for i, c in enumerate(cpu))
    print(f"  set    {label:22s} {out['ops_per_sec']:>8,.0f} sets/s  p50 {lat['p50'] / 1000:.2f} p99 {lat['p99'] / 1000:.2f} ms  "
          f"CPU us/set: {per}  (sum {sum(cpu) / n * 1e6:.0f}; PostgreSQL {pg_cpu / n * 1e6:.0f})")
else:
    d = max(out["deliveries"], 1)
    total = sum(shares) or 1
    own = []
    for i, c in enumerate(cpu):
        made = d * shares[i] / total if shares else 0
        own.append(f"n{i} {c / made * 1e6:.1f}" if made else f"n{i} -")
    print(f"  listen {label:22s} {out['deliveries_per_sec']:>8,.0f} deliveries/s ({out['requests']:,} writes)  "
          f"commit->delivery p50 {lat['p50'] / 1000:.2f} p99 {lat['p99'] / 1000:.2f} ms  "
          f"CPU us per delivery: all nodes {sum(cpu) / d * 1e6:.1f}; each node per delivery it made: {'  '.join(own)}")
