#!/usr/bin/env bash
# mesh-daemons.sh: N real `shoal serve` daemons on 127.0.0.1 in a full mesh (every pair trusts and
# dials each other), one zone shared read-write with all; C records written one at a time through
# the CLI on random nodes, each waited for on every node. Prints how many times each node received
# each change, from `shoal status --json` (received.records), against the minimum of 1.
#
#   Benchmarks/Scripts/mesh-daemons.sh [NODES=8] [CHANGES=40] [SHOAL=.build/debug/shoal]
#
# Line: mesh-daemons nodes=N changes=C records_received=R records_per_change_per_node=X
#       connection_ends=E one_per_pair=N×(N−1)   (E above that: some pairs hold two connections)
# Everything runs under a fresh folder in /tmp, removed at the end; the daemons are stopped on exit.
set -euo pipefail
n=${1:-8}; changes=${2:-40}; shoal=${3:-.build/debug/shoal}
[ -x "$shoal" ] || { echo "no shoal binary at $shoal (swift build first)" >&2; exit 2; }
root=$(mktemp -d /tmp/mesh-daemons.XXXXXX)
base=$((17400 + RANDOM % 500))
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$root"; }
trap cleanup EXIT

ids=()
for i in $(seq 1 "$n"); do
  "$shoal" init --data "$root/n$i" >/dev/null
  ids+=("$("$shoal" id --data "$root/n$i" | head -1 | awk '{print $1}')")
done
for i in $(seq 1 "$n"); do
  "$shoal" serve --data "$root/n$i" --listen "127.0.0.1:$((base + i))" --no-discovery --log-level error >"$root/n$i.log" 2>&1 &
  pids+=($!)
done
# Each daemon answers its control socket once it is up.
for i in $(seq 1 "$n"); do
  for _ in $(seq 1 200); do "$shoal" status --data "$root/n$i" >/dev/null 2>&1 && break; sleep 0.05; done
done
for i in $(seq 1 "$n"); do
  for j in $(seq 1 "$n"); do
    [ "$i" = "$j" ] && continue
    "$shoal" peer add "${ids[$((j - 1))]}" --name "n$j" --address "127.0.0.1:$((base + j))" --data "$root/n$i" >/dev/null
  done
done
"$shoal" zone create mesh --data "$root/n1" >/dev/null
for j in $(seq 2 "$n"); do "$shoal" zone share mesh "${ids[$((j - 1))]}" --read-write --data "$root/n1" >/dev/null; done

# Waits until every node holds record $1.
arrived() {
  for i in $(seq 1 "$n"); do
    for t in $(seq 1 400); do
      "$shoal" get mesh "$1" --data "$root/n$i" >/dev/null 2>&1 && break
      [ "$t" = 400 ] && { echo "record $1 did not reach node $i in 20 s" >&2; exit 1; }
      sleep 0.05
    done
  done
}
"$shoal" put mesh warm-up --type Item text="first" --data "$root/n1" >/dev/null
arrived warm-up
received() {
  local total=0
  for i in $(seq 1 "$n"); do
    r=$("$shoal" status --json --data "$root/n$i" | python3 -c 'import json,sys; print(json.load(sys.stdin)["received"]["records"])')
    total=$((total + r))
  done
  echo "$total"
}
before=$(received)
for c in $(seq 1 "$changes"); do
  on=$((1 + RANDOM % n))
  "$shoal" put mesh "change-$c" --type Item text="change number $c from node $on" --data "$root/n$on" >/dev/null
  arrived "change-$c"
done
sleep 0.5
after=$(received)
got=$((after - before))
# Connections at the end, over all nodes: n × (n − 1) when each pair holds exactly one.
conns=0
for i in $(seq 1 "$n"); do
  c=$("$shoal" status --json --data "$root/n$i" | python3 -c 'import json,sys; print(json.load(sys.stdin)["connections"])')
  conns=$((conns + c))
done
echo "mesh-daemons nodes=$n changes=$changes records_received=$got records_per_change_per_node=$(python3 -c "print(f'{$got / ($changes * ($n - 1)):.2f}')") connection_ends=$conns one_per_pair=$((n * (n - 1)))"
