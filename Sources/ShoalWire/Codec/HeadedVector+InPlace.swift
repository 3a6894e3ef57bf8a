// HeadedVector+InPlace: a record's headed version vector checked where it lies, and stamps read
// against it there — RecordView's validation without building a VersionVector or heads.

/// Where a checked headed version vector lies in a record's bytes: ``count`` entries of
/// ``entrySize`` bytes from ``start`` (node, big-endian; timestamp, little-endian; head state).
struct VectorInPlace {
    /// Bytes per entry: 16 for the node, 8 for the timestamp, 1 for the head state.
    static let entrySize = 25
    /// Offset of the first entry in the record's bytes.
    let start: Int
    /// Entries in the vector.
    let count: Int

    /// The timestamp of entry `index` (0 ..< ``count``) in `bytes`, the bytes the vector was
    /// checked in (so the entry lies inside them).
    func hlc(at index: Int, in bytes: UnsafeRawBufferPointer) -> UInt64 {
        UInt64(
            littleEndian: bytes.loadUnaligned(fromByteOffset: start &+ index &* Self.entrySize &+ 16, as: UInt64.self))
    }

    /// The node of entry `index` (0 ..< ``count``) in `bytes`, as for ``hlc(at:in:)``.
    func node(at index: Int, in bytes: UnsafeRawBufferPointer) -> NodeID {
        let at = start &+ index &* Self.entrySize
        return NodeID(
            high: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self)),
            low: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: at &+ 8, as: UInt64.self)))
    }
}

extension HeadedVector {
    /// Checks a headed vector as ``read(from:)`` does — the same errors at the same offsets — and
    /// returns where it lies instead of building it.
    static func check(from r: inout WireReader) throws(WireError) -> VectorInPlace {
        let vectorAt = r.offset
        let vvCount = try r.readCount(
            max: r.limits.maxVectorEntries, "version vector entry count", limitName: "maxVectorEntries")
        try r.require(vvCount, each: VectorInPlace.entrySize, "\(vvCount) version vector entries")
        let start = r.position
        guard vvCount > 0 else { return VectorInPlace(start: start, count: 0) }
        var previous = NodeID(high: 0, low: 0)
        var hasHead = false
        for i in 0..<vvCount {
            let at = r.offset
            let node = try r.readNodeID("version vector node")
            if i > 0 {
                if node == previous {
                    throw WireError(.duplicate, at: at, "node \(node) appears twice in the version vector")
                }
                if node < previous {
                    throw WireError(
                        .unsorted, at: at, "version vector nodes must increase; \(node) follows \(previous)")
                }
            }
            previous = node
            let hAt = r.offset
            if try r.readFixed64("version vector timestamp") == 0 {
                throw WireError(
                    .invalidValue, at: hAt, "version vector entry for \(node) is zero; zero entries are omitted")
            }
            let sAt = r.offset
            let state = try r.readByte("head state")
            guard state <= 2 else {
                throw WireError(.invalidValue, at: sAt, "head state \(state) is not 0 (none), 1 (save) or 2 (delete)")
            }
            hasHead = hasHead || state != 0
        }
        if !hasHead {
            throw WireError(
                .invalidValue, at: vectorAt,
                "a saved record needs at least one head (state 1 or 2) in its version vector")
        }
        return VectorInPlace(start: start, count: vvCount)
    }
}

extension WireReader {
    /// Reads a stamp as ``readStamp(_:_:)`` does — the same errors at the same offsets — against
    /// a vector checked in this reader's bytes, returning the entry's index and the distance
    /// below it.
    @inline(__always)
    mutating func readStamp(in vector: VectorInPlace, _ what: @autoclosure () -> String) throws(WireError) -> (
        index: Int, back: UInt64
    ) {
        // Fast path: index and offset one byte each, the index inside the vector, the offset below
        // its entry (entries are never zero, so an offset of 0 always is).
        if position &+ 2 <= count, let start {
            let i = start.load(fromByteOffset: position, as: UInt8.self)
            let back = start.load(fromByteOffset: position &+ 1, as: UInt8.self)
            if i < 0x80 && back == 0 && Int(i) < vector.count {
                position &+= 2
                return (Int(i), 0)
            }
        }
        return try readStampSlow(in: vector, what())
    }

    /// ``readStamp(in:_:)`` past its fast path.
    mutating func readStampSlow(in vector: VectorInPlace, _ what: @autoclosure () -> String) throws(WireError) -> (
        index: Int, back: UInt64
    ) {
        let at = offset
        let i = try readVarint("\(what()) node index")
        guard i < UInt64(vector.count) else {
            throw WireError(
                .invalidValue, at: at,
                "\(what()) names node index \(i) but the version vector has \(vector.count) entries")
        }
        let index = Int(truncatingIfNeeded: i)
        let top = vector.hlc(at: index, in: UnsafeRawBufferPointer(start: start, count: count))
        let backAt = offset
        let back = try readVarint("\(what()) timestamp offset")
        guard back < top else {
            throw WireError(
                .invalidValue, at: backAt,
                "\(what()) lies \(back) below an entry of \(top); a stamp's timestamp must be positive")
        }
        return (index, back)
    }
}
