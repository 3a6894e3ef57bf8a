// FieldView: one field slot of a RecordView, its value read from the encoded bytes on demand.

/// One field slot inside a ``RecordView``: its name, type, stamp and value, read in place.
///
/// The typed accessors (``int64``, ``double``, ``bool``, ``date``, ``utf8``, ``bytesValue``)
/// return nil when the slot holds another type (or is a removed-field marker) and allocate
/// nothing; ``string`` makes a `String` (which allocates above 15 bytes); ``value`` decodes the
/// slot into a ``FieldValue``. The bytes were validated with the record, so reading cannot fail.
public struct FieldView {
    let record: RecordView
    /// Where the slot starts (its name's length prefix) and ends in the record's bytes.
    let start: Int, end: Int

    /// The slot's name as UTF-8 bytes.
    public var nameBytes: UnsafeRawBufferPointer { Self.name(in: record.bytes, at: start) }

    /// The slot's name.
    public var name: String { String(decoding: nameBytes, as: UTF8.self) }

    /// Offset of the type tag: after the name and its length.
    var tagOffset: Int {
        let name = nameBytes
        guard let base = record.bytes.baseAddress, let p = name.baseAddress else { return start }
        return (p - base) &+ name.count
    }

    var tag: UInt8 { record.bytes[tagOffset] }

    /// Whether the slot carries a stamp (a saved edit).
    public var isStamped: Bool { tag & Record.stampedBit != 0 }

    /// Whether the slot is a removed-field marker (no value).
    public var isRemoved: Bool { tag & ~Record.stampedBit == 0 }

    /// The value's scalar kind (of its elements, for a list); nil for a removed-field marker.
    public var kind: FieldValue.Kind? { FieldValue.Kind(rawValue: tag & ValueTag.kindMask) }

    /// Whether the value is a list.
    public var isList: Bool { tag & ValueTag.listBit != 0 }

    /// A reader at the value's payload (after the tag and any stamp).
    func payloadReader() -> WireReader {
        var r = WireReader(UnsafeRawBufferPointer(rebasing: record.bytes[0..<end]), limits: .default)
        r.position = tagOffset &+ 1
        if isStamped {
            _ = try? r.readVarint("stamp node index")
            _ = try? r.readVarint("stamp timestamp offset")
        }
        return r
    }

    /// The slot's stamp: the dot of the save that wrote it, nil for an unsaved edit.
    public var stamp: Dot? {
        guard isStamped else { return nil }
        var r = WireReader(UnsafeRawBufferPointer(rebasing: record.bytes[0..<end]), limits: .default)
        r.position = tagOffset &+ 1
        guard let (index, back) = try? r.readStamp(in: record.vector, "stamp") else { return nil }
        return Dot(
            node: record.vector.node(at: index, in: record.bytes),
            hlc: HLC(rawValue: record.vector.hlc(at: index, in: record.bytes) &- back))
    }

    /// The value of an `int64` slot.
    public var int64: Int64? {
        guard tag & ~Record.stampedBit == FieldValue.Kind.int64.rawValue else { return nil }
        var r = payloadReader()
        return try? r.readZigzag("int64 value")
    }

    /// The value of a `date` slot.
    public var date: Timestamp? {
        guard tag & ~Record.stampedBit == FieldValue.Kind.date.rawValue else { return nil }
        var r = payloadReader()
        return (try? r.readZigzag("date value")).map { Timestamp(millisecondsSince1970: $0) }
    }

    /// The value of a `double` slot.
    public var double: Double? {
        guard tag & ~Record.stampedBit == FieldValue.Kind.double.rawValue else { return nil }
        var r = payloadReader()
        return try? r.readCanonicalDouble("double value")
    }

    /// The value of a `bool` slot.
    public var bool: Bool? {
        guard tag & ~Record.stampedBit == FieldValue.Kind.bool.rawValue else { return nil }
        var r = payloadReader()
        return try? r.readBool("bool value")
    }

    /// The UTF-8 bytes of a `string` slot, in place.
    public var utf8: UnsafeRawBufferPointer? { lengthPrefixed(.string) }

    /// The bytes of a `bytes` slot, in place.
    public var bytesValue: UnsafeRawBufferPointer? { lengthPrefixed(.bytes) }

    /// The value of a `string` slot.
    public var string: String? { utf8.map { String(decoding: $0, as: UTF8.self) } }

    /// The slot's value decoded (any type, lists included); nil for a removed-field marker.
    public var value: FieldValue? {
        let valueTag = tag & ~Record.stampedBit
        guard valueTag != 0 else { return nil }
        var r = payloadReader()
        return try? FieldValue.decodePayload(tag: valueTag, at: tagOffset, from: &r, zone: record.zone)
    }

    /// The payload of a `kind` slot that is a length and bytes (a string or bytes value), read
    /// directly when the name length, stamp and value length are one byte each.
    @inline(__always)
    func lengthPrefixed(_ kind: FieldValue.Kind) -> UnsafeRawBufferPointer? {
        guard let p = record.bytes.baseAddress, start < end, end <= record.bytes.count else {
            return lengthPrefixedSlow(kind)
        }
        let nameLength = Int(p.load(fromByteOffset: start, as: UInt8.self))
        var i = start &+ 1 &+ nameLength
        guard nameLength < 0x80, i < end else { return lengthPrefixedSlow(kind) }
        let tag = p.load(fromByteOffset: i, as: UInt8.self)
        guard tag & ~Record.stampedBit == kind.rawValue else { return nil }
        let stamped = tag & Record.stampedBit != 0
        i &+= stamped ? 3 : 1  // the tag, then a stamp's node index and offset
        guard i < end else { return lengthPrefixedSlow(kind) }
        if stamped
            && (p.load(fromByteOffset: i &- 2, as: UInt8.self) | p.load(fromByteOffset: i &- 1, as: UInt8.self)) >= 0x80
        {
            return lengthPrefixedSlow(kind)
        }
        let n = Int(p.load(fromByteOffset: i, as: UInt8.self))
        guard n < 0x80, n < end &- i else { return lengthPrefixedSlow(kind) }
        return UnsafeRawBufferPointer(start: p + (i &+ 1), count: n)
    }

    /// ``lengthPrefixed(_:)`` through a reader, for any length.
    func lengthPrefixedSlow(_ kind: FieldValue.Kind) -> UnsafeRawBufferPointer? {
        guard tag & ~Record.stampedBit == kind.rawValue else { return nil }
        var r = payloadReader()
        guard let n = try? r.readLength(max: r.limits.maxRecordBytes, "length", limitName: "maxRecordBytes") else {
            return nil
        }
        return try? r.readRaw(n, "value")
    }

    /// The name of the slot starting at `start` (validated): its varint length, then the bytes.
    @inline(__always)
    static func name(in bytes: UnsafeRawBufferPointer, at start: Int) -> UnsafeRawBufferPointer {
        let first = Int(bytes[start])
        if first < 0x80 { return UnsafeRawBufferPointer(rebasing: bytes[(start &+ 1)..<(start &+ 1 &+ first)]) }
        var r = WireReader(bytes, limits: .default)
        r.position = start
        let n = Int(truncatingIfNeeded: (try? r.readVarint("field name length")) ?? 0)
        return UnsafeRawBufferPointer(rebasing: bytes[r.position..<(r.position &+ n)])
    }
}
