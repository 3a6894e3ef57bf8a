// FuzzInput: the glue between libFuzzer's entry point and a ShoalSamples.FuzzChecks check.

package import ShoalSamples

/// Runs one fuzz target's check on the bytes libFuzzer hands over.
package enum FuzzInput {
    /// Copies the input, runs `target`'s check and traps when it fails: a broken property is a
    /// bug, and the trap makes libFuzzer save the input under `-artifact_prefix`. A decoder that
    /// traps by itself crashes the same way; rejected inputs (a thrown `WireError`) are fine.
    package static func run(_ target: FuzzChecks.Target, _ start: UnsafeRawPointer?, _ count: Int) -> CInt {
        let bytes = start.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: count)) } ?? []
        do {
            try target.check(bytes)
        } catch {
            fatalError("FUZZ CHECK FAILED \(error)")
        }
        return 0
    }
}
