// fuzz-c-abi: libFuzzer entry point for the C interface (shoalwire.h) of libShoalWireC.

import FuzzSupport
import ShoalSamples

/// libFuzzer's entry point: checks one input (FuzzChecks.cABI) and traps when a property breaks.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    FuzzInput.run(.cABI, start, count)
}
