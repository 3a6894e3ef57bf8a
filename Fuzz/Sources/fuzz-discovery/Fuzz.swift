// fuzz-discovery: libFuzzer entry point for DiscoveryAnnouncement(decoding:) — bytes from anyone on the LAN.

import FuzzSupport
import ShoalSamples

/// libFuzzer's entry point: checks one input (FuzzChecks.discovery) and traps when a property breaks.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    FuzzInput.run(.discovery, start, count)
}
