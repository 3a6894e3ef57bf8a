#!/usr/bin/env bash
# latency-pairs.sh: compares record-change latency during an asset transfer between variants,
# alternating them round by round and pooling every sample, because one run's p99 of 100 samples
# is its second-largest sample and moves by 2x from run to run on a shared machine.
#
#   Benchmarks/Scripts/latency-pairs.sh ROUNDS NAME=BINARY[:ENV=VALUE,...] ...
#
# Each variant is a shoal-bench binary (copy .build/release/shoal-bench aside per build) and,
# optionally, environment settings for it. Every round runs each variant once, in order, with
# SHOAL_BENCH_TRANSFER_ONLY=1 (the transfer and latency cases alone). Prints one line per run, then
# per variant the pooled percentiles of all its samples. Raw output stays in $OUT (default a new
# folder under /tmp). Example, the asset window at 16 against the default:
#
#   Benchmarks/Scripts/latency-pairs.sh 6 base=/tmp/bench w16=/tmp/bench:SHOAL_BENCH_ASSET_WINDOW=16
set -euo pipefail
if [ $# -lt 2 ] || ! [[ $1 =~ ^[0-9]+$ ]]; then
  echo "usage: $0 ROUNDS NAME=BINARY[:ENV=VALUE,...] ..." >&2
  exit 2
fi
rounds=$1; shift
out=${OUT:-$(mktemp -d /tmp/latency-pairs.XXXXXX)}
mkdir -p "$out"
for v in "$@"; do
  spec=${v#*=}; bin=${spec%%:*}
  [ -x "$bin" ] || { echo "variant $v: $bin is not an executable shoal-bench" >&2; exit 2; }
done
for r in $(seq "$rounds"); do
  for v in "$@"; do
    name=${v%%=*}; spec=${v#*=}; bin=${spec%%:*}; envs=""
    [ "$spec" != "$bin" ] && envs=${spec#*:}
    rm -f "$out/$name-$r.samples"
    env $(echo "$envs" | tr ',' ' ') SHOAL_BENCH_TRANSFER_ONLY=1 \
      SHOAL_BENCH_LATENCY_SAMPLES="$out/$name-$r.samples" "$bin" assets > "$out/$name-$r.txt" 2>&1 \
      || { echo "$name round $r failed; see $out/$name-$r.txt" >&2; exit 1; }
    echo "$name round $r: $(grep -hoE 'case=transfer-[^ ]+ MBps=[0-9.]+|cpu_s_per_gib=[0-9.]+|stolen_cpu_pct=[0-9.]+' "$out/$name-$r.txt" | tr '\n' ' ')" \
         "$(grep -h 'latency-during' "$out/$name-$r.txt" | grep -oE ' p50_ms=[0-9.]+| p99_ms=[0-9.]+|vs_idle_p99=[0-9.]+' | tr '\n' ' ')"
  done
done
python3 - "$out" "$@" <<'PY'
import glob, math, sys
out, variants = sys.argv[1], [v.split("=", 1)[0] for v in sys.argv[2:]]
def pct(xs, p):  # nearest rank, as shoal-bench reports
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, math.ceil(len(xs) * p) - 1))] if xs else float("nan")
for name in variants:
    s = {"idle": [], "during": []}
    for f in glob.glob(f"{out}/{name}-*.samples"):
        for line in open(f):
            kv = dict(x.split("=") for x in line.split())
            s[kv["phase"]].append((float(kv["total_ms"]), float(kv["save_ms"])))
    i = [t for t, _ in s["idle"]]; d = [t for t, _ in s["during"]]
    print(f"{name} pooled: idle n={len(i)} p50={pct(i, .5):.2f} p99={pct(i, .99):.2f} | "
          f"during n={len(d)} p50={pct(d, .5):.2f} p90={pct(d, .9):.2f} p99={pct(d, .99):.2f} "
          f"save_p99={pct([x for _, x in s['during']], .99):.2f} | p99 ratio={pct(d, .99) / pct(i, .99):.2f}")
print(f"raw output: {out}")
PY
