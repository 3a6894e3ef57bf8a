// WireWriter: writes into one exactly-sized allocation after a size pass (encode in two passes).

/// Writes canonical bytes into a buffer whose size was computed beforehand.
///
/// Encoders compute the exact encoded size first (see ``WireSize``), allocate once, then write
/// through this cursor. Every write is checked against the end of the buffer; a mismatch between
/// the size pass and the write pass is a programming error caught by the encoder's tests.
@usableFromInline package struct WireWriter {
    @usableFromInline let begin: UnsafeMutableRawPointer
    @usableFromInline var cursor: UnsafeMutableRawPointer
    @usableFromInline let end: UnsafeMutableRawPointer

    @inlinable package init(start: UnsafeMutableRawPointer, count: Int) {
        self.begin = start
        self.cursor = start
        self.end = start + count
    }

    /// The CRC-32C of everything written so far (frames end with it).
    package func checksumOfWritten(continuing previous: UInt32 = 0) -> UInt32 {
        CRC32C.checksum(UnsafeRawBufferPointer(start: begin, count: cursor - begin), continuing: previous)
    }

    /// Bytes written so far are `cursor - start`; this is what remains.
    @inlinable package var remaining: Int { end - cursor }

    @inlinable mutating func reserve(_ n: Int) -> UnsafeMutableRawPointer {
        precondition(n <= end - cursor, "ShoalWire size pass and write pass disagree")
        let p = cursor
        cursor += n
        return p
    }

    @inlinable package mutating func writeByte(_ b: UInt8) {
        reserve(1).storeBytes(of: b, as: UInt8.self)
    }

    @inlinable package mutating func writeFixed64(_ v: UInt64) {
        reserve(8).storeBytes(of: v.littleEndian, toByteOffset: 0, as: UInt64.self)
    }

    @inlinable package mutating func writeFixed32(_ v: UInt32) {
        reserve(4).storeBytes(of: v.littleEndian, toByteOffset: 0, as: UInt32.self)
    }

    @inlinable package mutating func writeVarint(_ value: UInt64) {
        var v = value
        if v < 0x80 {
            writeByte(UInt8(truncatingIfNeeded: v))
            return
        }
        let p = reserve(WireSize.varint(v))
        var i = 0
        while v >= 0x80 {
            p.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, toByteOffset: i, as: UInt8.self)
            v >>= 7
            i &+= 1
        }
        p.storeBytes(of: UInt8(truncatingIfNeeded: v), toByteOffset: i, as: UInt8.self)
    }

    @inlinable package mutating func writeZigzag(_ value: Int64) {
        writeVarint(WireSize.zigzag(value))
    }

    @inlinable package mutating func writeRaw(_ bytes: UnsafeRawBufferPointer) {
        guard let src = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count).copyMemory(from: src, byteCount: bytes.count)
    }

    /// Writes a varint length prefix and the bytes.
    @inlinable package mutating func writeLengthPrefixed(_ bytes: UnsafeRawBufferPointer) {
        writeVarint(UInt64(bytes.count))
        writeRaw(bytes)
    }

    /// Writes a varint length prefix and the UTF-8 bytes of `s`.
    @inlinable package mutating func writeString(_ s: String) {
        // Native strings (small ones through a copy on the stack) are read where they are;
        // only a bridged one is copied to make its UTF-8 contiguous.
        let written: Void? = s.utf8.withContiguousStorageIfAvailable { writeLengthPrefixed(UnsafeRawBufferPointer($0)) }
        if written == nil {
            var s = s
            s.withUTF8 { writeLengthPrefixed(UnsafeRawBufferPointer($0)) }
        }
    }

    @inlinable package mutating func writeBytes(_ bytes: some Collection<UInt8>) {
        writeVarint(UInt64(bytes.count))
        if bytes.withContiguousStorageIfAvailable({ writeRaw(UnsafeRawBufferPointer($0)) }) == nil {
            for b in bytes { writeByte(b) }
        }
    }
}

/// Exact encoded sizes, for the size pass of two-pass encoding.
@usableFromInline package enum WireSize {
    /// Size of an unsigned LEB128 varint, computed without branches.
    @inlinable package static func varint(_ v: UInt64) -> Int {
        let bits = 64 &- (v | 1).leadingZeroBitCount
        return (bits &+ 6) / 7
    }

    /// The zigzag mapping of a signed integer (small magnitudes give small varints).
    @inlinable package static func zigzag(_ v: Int64) -> UInt64 {
        UInt64(bitPattern: (v << 1) ^ (v >> 63))
    }

    /// Size of a length-prefixed byte string of `n` bytes.
    @inlinable package static func lengthPrefixed(_ n: Int) -> Int {
        varint(UInt64(n)) &+ n
    }

    /// Size of a length-prefixed string (its UTF-8 bytes).
    @inlinable package static func string(_ s: String) -> Int {
        lengthPrefixed(s.utf8.count)
    }
}

extension WireWriter {
    /// Allocates exactly `size` bytes, lets `body` fill them, and returns the array.
    @inlinable package static func encode(size: Int, _ body: (inout WireWriter) -> Void) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            guard let start = buffer.baseAddress else {
                initialized = 0
                return
            }
            var writer = WireWriter(start: UnsafeMutableRawPointer(start), count: size)
            body(&writer)
            precondition(writer.remaining == 0, "ShoalWire size pass and write pass disagree")
            initialized = size
        }
    }
}
