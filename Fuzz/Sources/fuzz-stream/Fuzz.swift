// fuzz-stream: libFuzzer entry point for the zstd stream of compression-3 frames (wire-format §14.3).

import FuzzSupport
import ShoalSamples

/// libFuzzer's entry point: checks one input (FuzzChecks.compressedStream) and traps when a property breaks.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    FuzzInput.run(.compressedStream, start, count)
}
