// WireReader+Varint: canonical LEB128 varints, zigzag, lengths and counts bounded by limits.

extension WireReader {
    /// Reads a canonical unsigned LEB128 varint of at most 64 bits.
    ///
    /// Rejects overlong forms (a final byte of zero after the first) and values above 64 bits.
    @inlinable package mutating func readVarint(_ what: @autoclosure () -> String) throws(WireError) -> UInt64 {
        guard position < count, let start else {
            throw error(.truncated, "expected a varint (\(what())), input ended")
        }
        let first = start.load(fromByteOffset: position, as: UInt8.self)
        if first < 0x80 {  // one-byte fast path
            position &+= 1
            return UInt64(first)
        }
        return try readVarintSlow(start, what())
    }

    @usableFromInline package mutating func readVarintSlow(_ start: UnsafeRawPointer, _ what: @autoclosure () -> String)
        throws(WireError) -> UInt64
    {
        let begin = position
        // Eight bytes at once when they are there: a varint of 2–8 bytes ends at the first byte
        // whose high bit is clear, and its 7-bit groups are gathered without a loop.
        if count &- position >= 8 {
            let word = UInt64(littleEndian: start.loadUnaligned(fromByteOffset: position, as: UInt64.self))
            let ends = ~word & 0x8080_8080_8080_8080
            if ends != 0 {
                let length = (ends.trailingZeroBitCount &>> 3) &+ 1
                if length > 1 && word &>> UInt64(truncatingIfNeeded: (length &- 1) &* 8) & 0xFF == 0 {
                    throw WireError(
                        .overlongVarint, at: base &+ begin,
                        "varint (\(what())) has a redundant trailing zero byte; canonical form uses the fewest bytes")
                }
                position &+= length
                return Self.gatherVarint(word, length: length)
            }
        }
        var result: UInt64 = 0
        var shift: UInt64 = 0
        var i = position
        while true {
            guard i < count else {
                throw WireError(.truncated, at: base &+ begin, "varint (\(what())) runs past the end of the input")
            }
            let byte = start.load(fromByteOffset: i, as: UInt8.self)
            i &+= 1
            if shift == 63 && byte > 1 {
                throw WireError(.varintOverflow, at: base &+ begin, "varint (\(what())) exceeds 64 bits")
            }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 {
                if byte == 0 && i &- begin > 1 {
                    throw WireError(
                        .overlongVarint, at: base &+ begin,
                        "varint (\(what())) has a redundant trailing zero byte; canonical form uses the fewest bytes")
                }
                position = i
                return result
            }
            shift &+= 7
        }
    }

    /// The value of a varint of `length` bytes (2…8) held in the low bytes of `word`: the low
    /// seven bits of each byte, packed (upper bytes beyond `length` are ignored).
    @inlinable @inline(__always) package static func gatherVarint(_ word: UInt64, length: Int) -> UInt64 {
        let keep: UInt64 = length >= 8 ? ~0 : (1 &<< UInt64(truncatingIfNeeded: length &* 8)) &- 1
        var x = word & keep & 0x7F7F_7F7F_7F7F_7F7F
        x = (x & 0x007F_007F_007F_007F) | ((x & 0x7F00_7F00_7F00_7F00) &>> 1)
        x = (x & 0x0000_3FFF_0000_3FFF) | ((x & 0x3FFF_0000_3FFF_0000) &>> 2)
        x = (x & 0x0000_0000_0FFF_FFFF) | ((x & 0x0FFF_FFFF_0000_0000) &>> 4)
        return x
    }

    /// Reads a zigzag-encoded signed 64-bit integer.
    @inlinable package mutating func readZigzag(_ what: @autoclosure () -> String) throws(WireError) -> Int64 {
        let u = try readVarint(what())
        return Int64(bitPattern: (u >> 1) ^ (0 &- (u & 1)))
    }

    /// Reads a varint that must fit in `Int` and be at most `limit`; `limitName` names the setting,
    /// a member of `owner` (`WireLimits` unless a type states a fixed limit of its own).
    /// A negative `limit` allows nothing (it never traps).
    @inlinable package mutating func readCount(
        max limit: Int, _ what: @autoclosure () -> String, limitName: @autoclosure () -> String,
        owner: @autoclosure () -> String = "WireLimits"
    ) throws(WireError) -> Int {
        // One-byte fast path, inlined where the rest is not: a count below 128 within the limit.
        if position < count, let start {
            let first = start.load(fromByteOffset: position, as: UInt8.self)
            if first < 0x80 && Int(first) <= limit {
                position &+= 1
                return Int(first)
            }
        }
        return try readCountSlow(max: limit, what(), limitName: limitName(), owner: owner())
    }

    /// ``readCount(max:_:limitName:owner:)`` past its fast path.
    @usableFromInline package mutating func readCountSlow(
        max limit: Int, _ what: @autoclosure () -> String, limitName: @autoclosure () -> String,
        owner: @autoclosure () -> String
    ) throws(WireError) -> Int {
        let at = offset
        let v = try readVarint(what())
        guard v <= UInt64(clamping: limit) else {
            throw WireError(
                .limitExceeded, at: at, "\(what()) is \(v), over the limit of \(limit) (\(owner()).\(limitName()))")
        }
        return Int(truncatingIfNeeded: v)
    }

    /// Reads a varint length prefix and checks the bytes are present (never allocates on a bare claim).
    @inlinable @inline(__always)
    package mutating func readLength(
        max limit: Int, _ what: @autoclosure () -> String, limitName: @autoclosure () -> String,
        owner: @autoclosure () -> String = "WireLimits"
    ) throws(WireError) -> Int {
        // One-byte fast path, inlined where the rest is not: a length below 128 within the limit
        // whose bytes follow.
        if position < count, let start {
            let first = Int(start.load(fromByteOffset: position, as: UInt8.self))
            if first < 0x80 && first <= limit && first < count &- position {
                position &+= 1
                return first
            }
        }
        return try readLengthSlow(max: limit, what(), limitName: limitName(), owner: owner())
    }

    /// ``readLength(max:_:limitName:owner:)`` past its fast path.
    @usableFromInline package mutating func readLengthSlow(
        max limit: Int, _ what: @autoclosure () -> String, limitName: @autoclosure () -> String,
        owner: @autoclosure () -> String
    ) throws(WireError) -> Int {
        let n = try readCount(max: limit, what(), limitName: limitName(), owner: owner())
        try require(n, what())
        return n
    }

    /// Reads a length-prefixed, valid UTF-8 string of at most `limit` bytes.
    @inlinable package mutating func readString(
        max limit: Int, _ what: @autoclosure () -> String, limitName: @autoclosure () -> String
    ) throws(WireError) -> String {
        let at = offset
        let n = try readLength(max: limit, what(), limitName: limitName())
        let raw = try readRaw(n, what())
        guard let s = UTF8Text.string(raw) else {
            throw WireError(.invalidUTF8, at: at, "\(what()) is not valid UTF-8")
        }
        return s
    }
}

/// Strings from wire bytes: all-ASCII text (the common case) takes a fast path.
@usableFromInline package enum UTF8Text {
    /// The string the bytes encode, or nil when they are not valid UTF-8.
    ///
    /// `String(validating:as:)` builds generic metadata on every call, which the codec benchmark
    /// measured at a fifth of decode time; ASCII is checked eight bytes at a time and needs no
    /// further validation, and everything else still goes through the standard library.
    @inlinable package static func string(_ raw: UnsafeRawBufferPointer) -> String? {
        let bytes = UnsafeBufferPointer<UInt8>(
            start: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), count: raw.count)
        if isASCII(raw) { return String(decoding: bytes, as: UTF8.self) }
        return String(validating: bytes, as: UTF8.self)
    }

    @inlinable package static func isASCII(_ raw: UnsafeRawBufferPointer) -> Bool {
        guard let p = raw.baseAddress else { return true }
        let n = raw.count
        var bits: UInt64 = 0
        if n >= 8 {
            // 32 bytes a round (four independent loads), then 8, then the last 8 (overlapping
            // bytes already checked): `i + k <= n` bounds each load.
            var i = 0
            while i &+ 32 <= n {
                bits |=
                    p.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                    | p.loadUnaligned(fromByteOffset: i &+ 8, as: UInt64.self)
                    | p.loadUnaligned(fromByteOffset: i &+ 16, as: UInt64.self)
                    | p.loadUnaligned(fromByteOffset: i &+ 24, as: UInt64.self)
                i &+= 32
            }
            while i &+ 8 <= n {
                bits |= p.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                i &+= 8
            }
            bits |= p.loadUnaligned(fromByteOffset: n &- 8, as: UInt64.self)
        } else if n >= 4 {
            // Two 4-byte loads that overlap cover 4–7 bytes.
            bits = UInt64(
                p.loadUnaligned(fromByteOffset: 0, as: UInt32.self)
                    | p.loadUnaligned(fromByteOffset: n &- 4, as: UInt32.self))
        } else {
            var i = 0
            while i < n {
                bits |= UInt64(p.load(fromByteOffset: i, as: UInt8.self))
                i &+= 1
            }
        }
        return bits & 0x8080_8080_8080_8080 == 0
    }
}
