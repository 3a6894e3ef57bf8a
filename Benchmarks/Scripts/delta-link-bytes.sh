#!/usr/bin/env bash
# delta-link-bytes.sh: the bytes a one-character edit of a 100 KiB text field costs on a real link.
# Two `shoal serve` daemons, each in a network namespace of its own, joined by a veth pair
# (10.88.0.1 and 10.88.0.2, IPv6 off, discovery off); B dials A. A owns zone `notes`, shares it
# with B, and holds record `doc` whose `text` is 100 KiB of ASCII lines. Once B holds it, one
# character in the middle changes on A; the veth's counters (both directions, Ethernet frames)
# give the bytes the edit took until B held it, then 1 s for the last acknowledgements. The same
# again after B's daemon restarts (connected and caught up again before the counters are read).
#
#   Benchmarks/Scripts/delta-link-bytes.sh [SHOAL=.build/release/shoal]     (as root; needs iproute2, python3)
#
# Lines: link case=one-char-edit field_bytes=102400 link=live|restart link_bytes=N link_packets=P
# Namespaces, veth and daemons are removed on exit; the data lives under a fresh folder in /tmp.
set -euo pipefail
shoal=$(realpath "${1:-.build/release/shoal}")
[ -x "$shoal" ] || { echo "no shoal binary at $shoal (swift build -c release --product shoal first)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces)" >&2; exit 2; }
command -v ip >/dev/null && command -v python3 >/dev/null || { echo "needs iproute2 and python3" >&2; exit 2; }

tag=$$
nsa=shoal-dla-$tag; nsb=shoal-dlb-$tag; va=dla$tag; vb=dlb$tag
root=$(mktemp -d /tmp/delta-link-bytes.XXXXXX)
pida=""; pidb=""
stop() {  # stops the daemon whose pid is $1 (SIGTERM, then SIGKILL after 10 s)
  local p=$1
  [ -n "$p" ] || return 0
  kill "$p" 2>/dev/null || return 0
  for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
}
cleanup() {
  stop "$pidb"; stop "$pida"
  ip netns del "$nsa" 2>/dev/null || true
  ip netns del "$nsb" 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The link: two namespaces, a veth pair between them, nothing else.
for ns in "$nsa" "$nsb"; do
  ip netns add "$ns"
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
  ip -n "$ns" link set lo up
done
ip link add "$va" netns "$nsa" type veth peer name "$vb" netns "$nsb"
ip -n "$nsa" addr add 10.88.0.1/24 dev "$va"; ip -n "$nsa" link set "$va" up
ip -n "$nsb" addr add 10.88.0.2/24 dev "$vb"; ip -n "$nsb" link set "$vb" up

# Bytes and packets through A's end of the veth, both directions.
counters() {
  ip netns exec "$nsa" sh -c "cd /sys/class/net/$va/statistics && echo \$((\$(cat rx_bytes) + \$(cat tx_bytes))) \$((\$(cat rx_packets) + \$(cat tx_packets)))"
}

# Polls "$@" every 0.1 s until it succeeds; fails after $limit seconds with $what.
limit=60
await() {
  local what=$1; shift
  for _ in $(seq 1 $((limit * 10))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "delta-link-bytes: $what: not within $limit s" >&2
  for d in a b; do echo "--- $d.log" >&2; tail -20 "$root/$d.log" >&2 || true; done
  exit 1
}

# The nodes, paired as the README's quick start does, with B dialling A's address.
a=$root/a; b=$root/b
"$shoal" init --data "$a" >/dev/null
"$shoal" init --data "$b" >/dev/null
ida=$("$shoal" id --data "$a" | head -1 | awk '{print $1}')
idb=$("$shoal" id --data "$b" | head -1 | awk '{print $1}')
"$shoal" peer add "$idb" --name b --data "$a" >/dev/null
"$shoal" peer add "$ida" --name a --address 10.88.0.1:7400 --data "$b" >/dev/null
"$shoal" zone create notes --data "$a" >/dev/null
"$shoal" zone share notes "$idb" --read-write --data "$a" >/dev/null

# 100 KiB of varied ASCII lines (a fixed seed), and the same with one character in the middle changed.
python3 - "$root/text" <<'EOF'
import random, sys
words = ("the quick sync record zone peer field merge offline note draft meeting lab shop floor home list buy milk "
         "call review ship plan idea today tomorrow project shoal fish river green blue fast slow remember garden "
         "kitchen school music book").split()
rng = random.Random(0x1A76E000)
lines, size = [], 0
while size < 102400:
    line = " ".join(rng.choice(words) for _ in range(rng.randint(4, 15))) + "\n"
    lines.append(line); size += len(line)
text = "".join(lines)[:102400]
if text.endswith("\n"):  # the shell's $(cat …) would drop it
    text = text[:-1] + "."
open(sys.argv[1], "w").write(text)
EOF
# `shoal put` takes the text as one argument (under the kernel's 128 KiB limit for one).
edit() {  # $1: the edit's number; changes the middle character of the stored text
  python3 - "$root/text" "$1" <<'EOF'
import sys
path, n = sys.argv[1], int(sys.argv[2])
t = open(path).read()
mid = len(t) // 2
c = "xyz"[n % 3]
if t[mid] == c: c = "w"
open(path, "w").write(t[:mid] + c + t[mid + 1:])
EOF
  "$shoal" put notes doc "text=$(cat "$root/text")" --data "$a" >/dev/null
}
"$shoal" put notes doc --type Note "text=$(cat "$root/text")" --data "$a" >/dev/null
field_bytes=$(wc -c <"$root/text")

start_a() { ip netns exec "$nsa" "$shoal" serve --data "$a" --listen 10.88.0.1:7400 --no-discovery --log-level error >>"$root/a.log" 2>&1 & pida=$!; }
start_b() { ip netns exec "$nsb" "$shoal" serve --data "$b" --listen 10.88.0.2:7400 --no-discovery --log-level error >>"$root/b.log" 2>&1 & pidb=$!; }

# B is caught up: connected, its subscription to A caught up, and the zone's digest equal to A's.
caught_up() {
  python3 - "$("$shoal" status --json --data "$a")" "$("$shoal" status --json --data "$b")" <<'EOF'
import json, sys
a, b = (json.loads(s) for s in sys.argv[1:3])
def digest(s): return [z["digest"] for z in s["zones"] if z["zone"].split("@")[0] == "notes"]
links = [r for r in b["replication"] if r["zone"].split("@")[0] == "notes" and r["receiving"]]
ok = b["connections"] >= 1 and digest(b) and digest(a) == digest(b) and links and all(r["receivedCaughtUp"] for r in links)
sys.exit(0 if ok else 1)
EOF
}

# One edit: counters before, the edit on A, wait until B holds it, 1 s for what follows, counters after.
measure() {  # $1: link, $2: the edit's number
  read -r bytes0 packets0 < <(counters)
  edit "$2"
  await "B holds edit $2" caught_up
  sleep 1
  read -r bytes1 packets1 < <(counters)
  echo "link case=one-char-edit field_bytes=$field_bytes link=$1 link_bytes=$((bytes1 - bytes0)) link_packets=$((packets1 - packets0))"
}

start_a; start_b
await "A's daemon answers" "$shoal" status --data "$a"
await "B's daemon answers" "$shoal" status --data "$b"
await "B holds the 100 KiB record" caught_up
sleep 1
measure live 1

# B's daemon restarts on the same directory; it dials A again and catches up before the edit.
stop "$pidb"; pidb=""
start_b
await "B's daemon answers after its restart" "$shoal" status --data "$b"
await "B is caught up after its restart" caught_up
sleep 1
measure restart 2
