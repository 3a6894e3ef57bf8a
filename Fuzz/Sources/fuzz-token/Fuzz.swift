// fuzz-token: libFuzzer entry point for ChangeToken(bytes:).contents().

import FuzzSupport
import ShoalSamples

/// libFuzzer's entry point: checks one input (FuzzChecks.token) and traps when a property breaks.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    FuzzInput.run(.token, start, count)
}
