// ByteAccess: Array.withUnsafeBytes for closures with typed throws (the standard one rethrows `any Error`).

/// Calls `body` with the bytes of `array`, keeping `body`'s error type.
func withBytes<T, E: Error>(of array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
    var result: Result<T, E>?
    array.withUnsafeBytes { raw in result = Result { () throws(E) -> T in try body(raw) } }
    return try result!.get()
}

/// Calls `body` with the mutable bytes of `array`, keeping `body`'s error type.
func withMutableBytes<T, E: Error>(of array: inout [UInt8], _ body: (UnsafeMutableRawBufferPointer) throws(E) -> T)
    throws(E) -> T
{
    var result: Result<T, E>?
    array.withUnsafeMutableBytes { raw in result = Result { () throws(E) -> T in try body(raw) } }
    return try result!.get()
}
