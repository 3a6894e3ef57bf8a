// fuzz-record: libFuzzer entry point for Record(decoding:).

import FuzzSupport
import ShoalSamples

/// libFuzzer's entry point: checks one input (FuzzChecks.record) and traps when a property breaks.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    FuzzInput.run(.record, start, count)
}
