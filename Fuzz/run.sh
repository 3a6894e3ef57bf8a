#!/usr/bin/env bash
# Builds the fuzz targets (if needed) and runs one with its seed corpus and dictionary.
#
#   Fuzz/run.sh TARGET SECONDS [extra libFuzzer flags...]
#   Fuzz/run.sh fuzz-record 300
#   Fuzz/run.sh fuzz-frame 60 -jobs=1 -max_len=8192
#
# The seeds in Fuzz/Corpus/TARGET are copied into Fuzz/corpus-work/TARGET (kept between runs,
# git-ignored) so that the committed seeds stay small; crashes land in Fuzz/artifacts/TARGET/.
# Set SHOAL_FUZZ_NO_BUILD=1 to skip the build step.
set -euo pipefail

usage() { echo "usage: $0 TARGET SECONDS [libFuzzer flags...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
target=$1; seconds=$2; shift 2
fuzz="$(cd "$(dirname "$0")" && pwd)"
cd "$fuzz"

[ -d "Corpus/$target" ] || { echo "unknown target $target; targets: $(ls Corpus | tr '\n' ' ')" >&2; exit 2; }

# swiftc keeps only the last -sanitize= flag, and SwiftPM emits --sanitize=fuzzer and
# --sanitize=address in an order that changes from run to run (a Set), so a build got either
# coverage or ASan, never both. The trailing -Xswiftc flag asks for both explicitly.
build() {
  swift build -c release --sanitize=fuzzer --sanitize=address -Xswiftc -parse-as-library \
    -Xswiftc -sanitize=fuzzer,address --package-path "$fuzz"
}
# Coverage counters in the binary, ASan checks in ShoalWire's objects.
instrumented() {
  local sections symbols
  sections=$(readelf -S ".build/release/$target" 2>/dev/null) || return 1
  symbols=$(nm -u .build/release/ShoalWire.build/FrameReader.swift.o 2>/dev/null) || return 1
  [[ $sections == *__sancov_cntrs* && $symbols == *__asan_* ]]
}
if [ "${SHOAL_FUZZ_NO_BUILD:-0}" != 1 ]; then
  build
  # Objects from an older build (without the combined flag) lack one of the two: rebuild clean.
  if ! instrumented; then
    echo "run.sh: $target lacks coverage or ASan instrumentation; rebuilding from scratch" >&2
    rm -rf "$fuzz/.build"
    build
  fi
fi
instrumented || { echo "run.sh: .build/release/$target is not instrumented for coverage and ASan" >&2; exit 1; }

work="corpus-work/$target"
artifacts="artifacts/$target"
mkdir -p "$work" "$artifacts"
cp -n "Corpus/$target"/* "$work"/ 2>/dev/null || true

flags=(
  "-max_total_time=$seconds"
  "-rss_limit_mb=2048"
  "-artifact_prefix=$artifacts/"
  "-print_final_stats=1"
  "-dict=Dictionaries/$target.dict"
)
case $target in
  # Decoding uses WireLimits with a 64 KiB frame limit; any single allocation over 1 MiB
  # (a zstd bomb, a declared length the limit should refuse) is a malloc-limit crash.
  fuzz-compressed) flags+=("-malloc_limit_mb=1") ;;
  # The re-encoding check makes a stream compression context: one allocation of about 1.3 MB.
  fuzz-stream) flags+=("-malloc_limit_mb=2") ;;
esac

# Let libFuzzer and ASan report crashes; Swift's own backtracer gets in their way.
export SWIFT_BACKTRACE=enable=no
exec ".build/release/$target" "${flags[@]}" "$@" "$work"
