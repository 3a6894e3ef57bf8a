// FuzzChecks+CABI: fuzz-c-abi's check among the others, for the tests' replay of its corpus.

extension FuzzChecks {
    /// The C interface (shoalwire.h): ``CABIChecks`` where the C library is linked
    /// (SHOAL_C_ABI: the main package's tests and the fuzz-c-abi target), nothing elsewhere.
    /// - Throws: ``Failure`` when a property breaks.
    package static func cABI(_ bytes: [UInt8]) throws(Failure) {
        #if SHOAL_C_ABI
            do {
                try CABIChecks.check(bytes)
            } catch {
                throw Failure(Target.cABI.rawValue, error.description)
            }
        #endif
    }
}
