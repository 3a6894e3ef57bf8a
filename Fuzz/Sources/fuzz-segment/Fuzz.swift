// fuzz-segment: libFuzzer entry point for the asset store's segment files (scan and chunk reads).

import FuzzSupport
import ShoalSamples

/// libFuzzer's entry point: checks one input (FuzzChecks.segment) and traps when a property breaks.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    FuzzInput.run(.segment, start, count)
}
