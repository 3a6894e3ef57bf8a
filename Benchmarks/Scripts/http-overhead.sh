#!/usr/bin/env bash
# http-overhead.sh: what the daemon's HTTP server costs an initial sync, measured in one run with
# it on and off in turn. Node A holds R records (written once through its HTTP API, then copied
# for every run); a fresh node B dials it and receives them all. Both daemons run with the HTTP
# server (`--http 127.0.0.1:0`, its change hub and metrics live) or without it (`--no-http`),
# alternating, K runs each; a scrape of B's /metrics every 0.1 s while HTTP is on.
#
#   Benchmarks/Scripts/http-overhead.sh [RECORDS=20000] [RUNS=3] [SHOAL=.build/release/shoal]
#
# Line per run: http-overhead http=<on|off> run=I records=R seconds=S records_per_s=X
# Then: http-overhead summary on_median_s= off_median_s= ratio=on/off
# Everything runs under a fresh folder in /tmp, removed at the end; the daemons are stopped on exit.
set -euo pipefail
records=${1:-20000}; runs=${2:-3}; shoal=${3:-.build/release/shoal}
[ -x "$shoal" ] || { echo "no shoal binary at $shoal (swift build -c release first)" >&2; exit 2; }
root=$(mktemp -d /tmp/http-overhead.XXXXXX)
pids=()
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }
trap 'stop_all; rm -rf "$root"' EXIT

port_of() {  # $1 log file, $2 key (listen or http)
  for _ in $(seq 1 600); do
    p=$(grep -o "$2=127\.0\.0\.1:[0-9]*" "$1" | head -1 | cut -d: -f2 || true)
    [ -n "$p" ] && { echo "$p"; return; }
    sleep 0.05
  done
  echo "no $2 port in $1" >&2; exit 1
}

# A's data, once: R records in zone bench, written through A's HTTP API.
"$shoal" init --data "$root/a0" >/dev/null
"$shoal" serve --data "$root/a0" --listen 127.0.0.1:0 --http 127.0.0.1:0 --no-discovery >"$root/a0.log" 2>&1 &
pids+=($!)
http=$(port_of "$root/a0.log" http)
key=$("$shoal" http-key --data "$root/a0")
curl -sf -X POST -H "X-API-Key: $key" -d '{"zone":"bench"}' "127.0.0.1:$http/api/v1/zones" >/dev/null
python3 - "$http" "$key" "$records" <<'PY'
import http.client, json, sys
port, key, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port)
for i in range(n):
    body = json.dumps({"type": "Item", "fields": {"title": f"item {i}", "n": i, "text": "x" * 200}})
    c.request("PUT", f"/api/v1/zones/bench/records/r{i}", body, {"X-API-Key": key, "Content-Type": "application/json"})
    r = c.getresponse(); r.read()
    if r.status != 200: sys.exit(f"put {i}: {r.status}")
PY
stop_all
rm -f "$root/a0/daemon.lock" "$root/a0/control.sock"

one_run() {  # $1 on|off, $2 run index
  rm -rf "$root/a" "$root/b"; cp -r "$root/a0" "$root/a"
  "$shoal" init --data "$root/b" >/dev/null
  local ida idb flags
  ida=$("$shoal" id --data "$root/a"); idb=$("$shoal" id --data "$root/b")
  "$shoal" peer add "$ida" --data "$root/b" >/dev/null
  "$shoal" peer add "$idb" --data "$root/a" >/dev/null
  "$shoal" zone share bench "$idb" --read-only --data "$root/a" >/dev/null
  if [ "$1" = on ]; then flags=(--http 127.0.0.1:0); else flags=(--no-http); fi
  "$shoal" serve --data "$root/a" --listen 127.0.0.1:0 --no-discovery "${flags[@]}" >"$root/a.log" 2>&1 &
  pids+=($!)
  local pa; pa=$(port_of "$root/a.log" listen)
  local start; start=$(date +%s.%N)
  "$shoal" serve --data "$root/b" --listen 127.0.0.1:0 --peer "127.0.0.1:$pa" --no-discovery "${flags[@]}" >"$root/b.log" 2>&1 &
  pids+=($!)
  local hb=""; [ "$1" = on ] && hb=$(port_of "$root/b.log" http)
  # The last record written arrives last (A serves its log in order); polled every 0.1 s.
  until "$shoal" get bench "r$((records - 1))" --data "$root/b" >/dev/null 2>&1; do
    if [ -n "$hb" ]; then curl -s "127.0.0.1:$hb/metrics" >/dev/null || true; fi
    sleep 0.1
  done
  local end; end=$(date +%s.%N)
  local got; got=$("$shoal" digest bench --json --data "$root/b" | python3 -c 'import json,sys; print(json.load(sys.stdin)["records"])')
  [ "$got" = "$records" ] || { echo "B holds $got records, not $records" >&2; exit 1; }
  stop_all
  python3 -c "s=$end-$start; print(f'http-overhead http=$1 run=$2 records=$records seconds={s:.2f} records_per_s={$records/s:.0f}')"
}

results=()
for i in $(seq 1 "$runs"); do
  for mode in on off; do
    line=$(one_run "$mode" "$i"); echo "$line"; results+=("$line")
  done
done
printf '%s\n' "${results[@]}" | python3 -c '
import re, statistics, sys
t = {"on": [], "off": []}
for l in sys.stdin:
    m = re.search(r"http=(on|off) .* seconds=([0-9.]+)", l)
    if m: t[m.group(1)].append(float(m.group(2)))
on, off = statistics.median(t["on"]), statistics.median(t["off"])
print(f"http-overhead summary on_median_s={on:.2f} off_median_s={off:.2f} ratio={on/off:.3f}")'
