// WireReader: a bounds-checked cursor over borrowed bytes; every read returns a value or a WireError.

/// A cursor over a borrowed byte buffer, used by every ShoalWire decoder.
///
/// All reads are bounds-checked against ``available`` and throw ``WireError`` rather than trap.
/// The reader never copies the input; strings and byte values are copied out only when a value
/// needs them. Offsets in errors are relative to ``base`` (the start of the top-level input).
@usableFromInline package struct WireReader {
    @usableFromInline let start: UnsafeRawPointer?
    @usableFromInline let count: Int
    /// Offset of the next unread byte from `start`.
    @usableFromInline package var position: Int
    /// Added to `position` in error offsets, so nested readers report absolute offsets.
    @usableFromInline package let base: Int
    /// Limits that bound every allocation and count derived from the input.
    @usableFromInline package let limits: WireLimits

    @inlinable
    package init(_ buffer: UnsafeRawBufferPointer, limits: WireLimits, base: Int = 0) {
        self.start = buffer.baseAddress
        self.count = buffer.count
        self.position = 0
        self.base = base
        self.limits = limits
    }

    /// Bytes left to read.
    @inlinable package var available: Int { count &- position }
    /// Whether every byte has been consumed.
    @inlinable package var isAtEnd: Bool { position >= count }
    /// Absolute offset of the next byte, for error messages.
    @inlinable package var offset: Int { base &+ position }

    /// Makes an error located at the current position.
    @inlinable package func error(_ code: WireError.Code, _ detail: @autoclosure () -> String) -> WireError {
        WireError(code, at: offset, detail())
    }

    /// Throws `trailingBytes` unless every byte has been consumed.
    @inlinable package func expectEnd(_ what: @autoclosure () -> String) throws(WireError) {
        if position != count {
            throw error(.trailingBytes, "\(available) byte(s) after the end of \(what())")
        }
    }

    /// Throws `truncated` unless `n` more bytes are available.
    @inlinable package func require(_ n: Int, _ what: @autoclosure () -> String) throws(WireError) {
        if n > available || n < 0 {
            throw error(.truncated, "expected \(n) byte(s) of \(what()), \(available) left")
        }
    }

    /// Throws `truncated` unless `count` elements of at least `size` bytes each can still follow.
    ///
    /// Checked before any allocation sized by `count`; a product that overflows `Int` cannot fit
    /// either, so huge limits never turn a claimed count into a trap.
    @inlinable package func require(_ count: Int, each size: Int, _ what: @autoclosure () -> String) throws(WireError) {
        let (total, overflow) = count.multipliedReportingOverflow(by: size)
        if overflow || total > available || total < 0 {
            throw error(.truncated, "expected \(what()) of at least \(size) byte(s) each, \(available) byte(s) left")
        }
    }

    @inlinable package mutating func readByte(_ what: @autoclosure () -> String) throws(WireError) -> UInt8 {
        guard position < count, let start else {
            throw error(.truncated, "expected \(what()), input ended")
        }
        let b = start.load(fromByteOffset: position, as: UInt8.self)
        position &+= 1
        return b
    }

    /// Reads a little-endian 64-bit word.
    @inlinable package mutating func readFixed64(_ what: @autoclosure () -> String) throws(WireError) -> UInt64 {
        try require(8, what())
        guard let start else { throw error(.truncated, "expected \(what())") }
        let v = start.loadUnaligned(fromByteOffset: position, as: UInt64.self)
        position &+= 8
        return UInt64(littleEndian: v)
    }

    /// Reads a little-endian 32-bit word.
    @inlinable package mutating func readFixed32(_ what: @autoclosure () -> String) throws(WireError) -> UInt32 {
        try require(4, what())
        guard let start else { throw error(.truncated, "expected \(what())") }
        let v = start.loadUnaligned(fromByteOffset: position, as: UInt32.self)
        position &+= 4
        return UInt32(littleEndian: v)
    }

    /// Returns a view of the next `n` bytes and advances past them.
    @inlinable package mutating func readRaw(_ n: Int, _ what: @autoclosure () -> String) throws(WireError)
        -> UnsafeRawBufferPointer
    {
        try require(n, what())
        let p = start.map { $0 + position }
        position &+= n
        return UnsafeRawBufferPointer(start: p, count: n)
    }

    /// Copies the next `n` bytes into a new array.
    @inlinable package mutating func readBytes(_ n: Int, _ what: @autoclosure () -> String) throws(WireError) -> [UInt8]
    {
        let raw = try readRaw(n, what())
        return [UInt8](raw)
    }
}

/// Borrowing an array's bytes under typed throws (`withUnsafeBytes` only rethrows `any Error`).
package enum Borrowed {
    /// Calls `body` with the bytes of `array` and passes its `WireError` through unchanged.
    @inlinable package static func bytes<T>(of array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(WireError) -> T)
        throws(WireError) -> T
    {
        let result: Result<T, WireError> = array.withUnsafeBytes { raw in
            do throws(WireError) { return .success(try body(raw)) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
