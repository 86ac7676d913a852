#!/bin/bash
# Daemon CPU per request with and without security rules: `hearth bench get|set` at a fixed rate against
# three daemons in turn: no rules (open), a typical rule (signed-in and a token claim; for sets also the
# size of the new document), and a get()-based rule (a membership document read per request).
#
#   clients/python/bench/rules_cost.sh [get|set] [rate] [rounds]      (release build: swift build -c release)
#
# Prints one line per run: ops/s, daemon CPU µs per request (utime+stime of hearthd / requests), p50 µs.
set -euo pipefail
scenario=${1:-get}; rate=${2:-50000}; rounds=${3:-3}
B=${HEARTH_BUILD:-$(cd "$(dirname "$0")/../../.." && pwd)/.build/release}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
openssl rand -base64 48 > "$dir/secret"
openssl rand -hex 32 > "$dir/admin.key"
cat > "$dir/typical.rules" <<'RULES'
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /bench/{docId} {
      allow get: if request.auth != null && request.auth.token.role == 'bench';
      allow create, update: if request.auth != null && request.auth.token.role == 'bench'
        && request.resource.data.size() <= 20;
    }
  }
}
RULES
cat > "$dir/getrule.rules" <<'RULES'
rules_version = '2';
service cloud.firestore {
  match /databases/{database}/documents {
    match /bench/{docId} {
      allow get: if request.auth != null
        && exists(/databases/$(database)/documents/members/$(request.auth.uid));
      allow create, update: if request.auth != null
        && get(/databases/$(database)/documents/members/$(request.auth.uid)).data.role == 'writer';
    }
  }
}
RULES
python3 - "$dir" <<'PY'
import base64, hashlib, hmac, json, sys, time
d = sys.argv[1]
b = lambda x: base64.urlsafe_b64encode(x).rstrip(b"=").decode()
secret = open(f"{d}/secret", "rb").read().rstrip(b"\n")
now = int(time.time())
signing = b(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + "." + \
    b(json.dumps({"sub": "benchuser", "role": "bench", "iat": now, "exp": now + 86400}).encode())
open(f"{d}/token", "w").write(signing + "." + b(hmac.new(secret, signing.encode(), hashlib.sha256).digest()))
PY

run() {   # label, daemon args...
  local label=$1; shift
  rm -rf "$dir/data"
  "$B/hearthd" --port 0 --data-dir "$dir/data" "$@" 2> "$dir/log" & local pid=$!
  local port=""
  for _ in $(seq 100); do port=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$dir/log" | grep -o '[0-9]*$' || true); [ -n "$port" ] && break; sleep 0.05; done
  if [[ "$*" == *getrule* ]]; then
    printf '{"op":"hello","adminKey":"%s"}\n{"op":"set","path":"members/benchuser","data":{"role":"writer"}}\n' \
      "$(cat "$dir/admin.key")" | nc -q1 127.0.0.1 "$port" > /dev/null
  fi
  local auth=()
  [[ "$*" == *--rules* ]] && auth=(--token-file "$dir/token")
  "$B/hearth" bench "$scenario" --port "$port" -c 50 -d 8 --rate "$rate" --server-pid "$pid" "${auth[@]}" --json > "$dir/out.json"
  kill "$pid"; wait "$pid" 2> /dev/null || true
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(f\"{sys.argv[2]:8} {d['ops_per_sec']:>9.0f} ops/s  {d['server']['cpu_us_per_request']:>7.2f} us/req  p50 {d['latency_us']['p50']} us  errors {d['errors']}\")" "$dir/out.json" "$label"
}

for _ in $(seq "$rounds"); do
  run open
  run typical --rules "$dir/typical.rules" --auth-secret-file "$dir/secret"
  run getrule --rules "$dir/getrule.rules" --auth-secret-file "$dir/secret" --admin-key-file "$dir/admin.key"
done
