#!/usr/bin/env bash
# Runs a command in a network namespace of its own whose loopback is shaped like a LAN link, so
# that two nodes on 127.0.0.1 talk as over a slower wire: a token bucket (`tc tbf`) at RATE with
# a queue of QUEUE, and an MTU of MTU. Needs root (it creates the namespace) and the tbf qdisc.
#
#   RATE=1gbit QUEUE=2ms MTU=1500 Benchmarks/Scripts/shaped-link.sh \
#       env SHOAL_BENCH_ASSET_MIB=8 Benchmarks/.build/release/shoal-bench assets
#
# The namespace is removed when the command ends.
set -euo pipefail
rate="${RATE:-1gbit}"
queue="${QUEUE:-2ms}"
mtu="${MTU:-1500}"
ns="shoal-shaped-$$"
ip netns add "$ns"
trap 'ip netns del "$ns"' EXIT
ip netns exec "$ns" ip link set lo mtu "$mtu"
ip netns exec "$ns" ip link set lo up
# The bucket must hold at least one packet (loopback sends up to 64 KiB at once with offloads).
ip netns exec "$ns" tc qdisc add dev lo root tbf rate "$rate" burst 256kb latency "$queue"
echo "# shaped loopback: rate $rate, queue $queue, mtu $mtu (namespace $ns)" >&2
ip netns exec "$ns" "$@"
