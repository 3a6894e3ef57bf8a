// fuzz-messages: libFuzzer entry point for the replication messages (hello, zones, subscribe,
// acknowledgement, changes with sparse sections).

import FuzzSupport
import ShoalSamples

/// libFuzzer's entry point: checks one input (FuzzChecks.messages) and traps when a property breaks.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    FuzzInput.run(.messages, start, count)
}
