// fuzz-compressed: libFuzzer entry point for zstd and dictionary payloads under a 64 KiB frame limit.

import FuzzSupport
import ShoalSamples

/// libFuzzer's entry point: checks one input (FuzzChecks.compressed) and traps when a property breaks.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    FuzzInput.run(.compressed, start, count)
}
