#!/usr/bin/env bash
# Builds libShoalWireC (release) and installs it with shoalwire.h and shoalwire.pc under PREFIX.
#
#   bindings/c/install.sh /usr/local
#   cc app.c $(PKG_CONFIG_PATH=/usr/local/lib/pkgconfig pkg-config --cflags --libs shoalwire)
#
# The library needs the Swift runtime it was built with; shoalwire.pc puts the toolchain's
# runtime directory on the program's run path. SHOALWIRE_CONFIGURATION=debug installs the debug
# build instead (the one `swift build` and `swift test` make).
set -euo pipefail
prefix=${1:?usage: $0 PREFIX}
root="$(cd "$(dirname "$0")/../.." && pwd)"
configuration=${SHOALWIRE_CONFIGURATION:-release}
swift build -c "$configuration" --product ShoalWireC --package-path "$root"
bin=$(swift build -c "$configuration" --show-bin-path --package-path "$root")
runtime="$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")/lib/swift/linux"
version=$(sed -n 's/^#define SHOAL_ABI_VERSION \([0-9]*\)$/\1/p' "$root/Sources/CShoalWire/include/shoalwire.h")
mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
install -m 0755 "$bin/libShoalWireC.so" "$prefix/lib/"
install -m 0644 "$root/Sources/CShoalWire/include/shoalwire.h" "$prefix/include/"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" -e "s|@SWIFT_RUNTIME@|$runtime|" \
  "$root/Sources/CShoalWire/shoalwire.pc.in" > "$prefix/lib/pkgconfig/shoalwire.pc"
echo "installed libShoalWireC.so, shoalwire.h and shoalwire.pc under $prefix"
