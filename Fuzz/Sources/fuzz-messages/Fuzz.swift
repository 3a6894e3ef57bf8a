// fuzz-messages: libFuzzer entry point for the replication messages (hello, zones with zone
// shares, subscribe, acknowledgement, changes with sparse sections, the asset lane) and zone shares.

import FuzzSupport
import ShoalSamples

/// libFuzzer's entry point: checks one input (FuzzChecks.messages) and traps when a property breaks.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    FuzzInput.run(.messages, start, count)
}
