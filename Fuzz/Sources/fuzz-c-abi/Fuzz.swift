// fuzz-c-abi: libFuzzer entry point for the C interface (shoalwire.h) of libShoalWireC.

/// libFuzzer's entry point: checks one input (CABIChecks) and traps when a property breaks.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = start.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: count)) } ?? []
    do {
        try CABIChecks.check(bytes)
    } catch {
        fatalError("FUZZ CHECK FAILED \(error)")
    }
    return 0
}
