// fuzz-control: libFuzzer entry point for ErrorMessage, PingMessage and GoodbyeMessage payloads.

import FuzzSupport
import ShoalSamples

/// libFuzzer's entry point: checks one input (FuzzChecks.control) and traps when a property breaks.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    FuzzInput.run(.control, start, count)
}
