// FieldValue+Encoding: the canonical bytes of field values (type tag, then the payload).

/// Type tags of field values: bits 0–5 the scalar kind, bit 6 set for a list.
@usableFromInline package enum ValueTag {
    @usableFromInline package static let listBit: UInt8 = 0x40
    @usableFromInline package static let kindMask: UInt8 = 0x3F
}

extension FieldValue {
    /// The one-byte type tag: the kind, with bit 6 set for a list.
    @inlinable package var tag: UInt8 {
        switch self {
        case .list(let l): return l.elementKind.rawValue | ValueTag.listBit
        default: return kind.rawValue
        }
    }

    /// Size of the payload (without the tag) inside a record of zone `zone`.
    ///
    /// Inlined into the record's size pass: called opaquely, it makes the caller copy (retain
    /// and release) each slot around the call.
    @inline(__always) package func payloadSize(zone: RecordZone.ID) -> Int {
        switch self {
        case .string(let s): return WireSize.string(s)
        case .int64(let v): return WireSize.varint(WireSize.zigzag(v))
        case .double: return 8
        case .bool: return 1
        case .bytes(let b): return WireSize.lengthPrefixed(b.count)
        case .date(let t): return WireSize.varint(WireSize.zigzag(t.millisecondsSince1970))
        case .reference(let r): return r.payloadSize(zone: zone)
        case .asset(let a): return 32 &+ WireSize.varint(UInt64(bitPattern: a.size))
        case .location(let l): return l.payloadSize
        case .list(let l): return l.payloadSize(zone: zone)
        }
    }

    /// Writes the payload (without the tag); inlined into the record's write pass, as
    /// ``payloadSize(zone:)`` is into its size pass.
    @inline(__always) package func encodePayload(into w: inout WireWriter, zone: RecordZone.ID) {
        switch self {
        case .string(let s): w.writeString(s)
        case .int64(let v): w.writeZigzag(v)
        case .double(let d): w.writeFixed64(CanonicalDouble.bits(d))
        case .bool(let b): w.writeByte(b ? 1 : 0)
        case .bytes(let b): w.writeBytes(b)
        case .date(let t): w.writeZigzag(t.millisecondsSince1970)
        case .reference(let r): r.encodePayload(into: &w, zone: zone)
        case .asset(let a): w.writeContentHash(a.hash); w.writeVarint(UInt64(bitPattern: a.size))
        case .location(let l): l.encodePayload(into: &w)
        case .list(let l): l.encodePayload(into: &w, zone: zone)
        }
    }

    /// Reads a payload of the value with type tag `tag`, which was read at offset `tagOffset`
    /// (an undefined tag is reported there, not after a stamp that may follow it).
    @usableFromInline package static func decodePayload(
        tag: UInt8, at tagOffset: Int, from r: inout WireReader, zone: RecordZone.ID
    ) throws(WireError) -> FieldValue {
        if tag & ValueTag.listBit != 0 {
            guard tag & 0x80 == 0, let kind = Kind(rawValue: tag & ValueTag.kindMask) else {
                throw undefinedTag(tag, at: tagOffset)
            }
            return .list(try ListValue.decodePayload(kind: kind, from: &r, zone: zone))
        }
        guard let kind = Kind(rawValue: tag) else { throw undefinedTag(tag, at: tagOffset) }
        return try decodeScalar(kind: kind, from: &r, zone: zone)
    }

    /// The error for a value type tag that is not defined, read at `tagOffset`.
    static func undefinedTag(_ tag: UInt8, at tagOffset: Int) -> WireError {
        if tag & ValueTag.listBit != 0 {
            return WireError(
                .unknownRequiredTag, at: tagOffset,
                "value type tag 0x\(String(tag, radix: 16)) is not defined (lists are 0x41–0x49)")
        }
        return WireError(
            .unknownRequiredTag, at: tagOffset,
            "value type tag 0x\(String(tag, radix: 16)) is not defined (scalars are 0x01–0x09)")
    }

    @inline(__always)
    static func decodeScalar(kind: Kind, from r: inout WireReader, zone: RecordZone.ID) throws(WireError) -> FieldValue
    {
        switch kind {
        case .string:
            return .string(try r.readString(max: r.limits.maxRecordBytes, "string value", limitName: "maxRecordBytes"))
        case .int64: return .int64(try r.readZigzag("int64 value"))
        case .double: return .double(try r.readCanonicalDouble("double value"))
        case .bool: return .bool(try r.readBool("bool value"))
        case .bytes:
            let n = try r.readLength(max: r.limits.maxRecordBytes, "bytes value length", limitName: "maxRecordBytes")
            return .bytes(try r.readBytes(n, "bytes value"))
        case .date: return .date(Timestamp(millisecondsSince1970: try r.readZigzag("date value")))
        case .reference: return .reference(try Reference.decodePayload(from: &r, zone: zone))
        case .asset: return .asset(try Asset.decodePayload(from: &r))
        case .location: return .location(try Location.decodePayload(from: &r))
        }
    }
}

extension WireReader {
    /// Reads a fixed 64-bit double whose NaN, if any, is the canonical one.
    @inlinable package mutating func readCanonicalDouble(_ what: @autoclosure () -> String) throws(WireError) -> Double
    {
        let at = offset
        let bits = try readFixed64(what())
        let d = Double(bitPattern: bits)
        if d.isNaN && bits != CanonicalDouble.nanBits {
            throw WireError(
                .invalidValue, at: at,
                "\(what()) is a NaN with payload 0x\(String(bits, radix: 16)); the only NaN allowed is 0x7ff8000000000000"
            )
        }
        return d
    }

    /// Reads a bool byte, which must be 0 or 1.
    @inlinable package mutating func readBool(_ what: @autoclosure () -> String) throws(WireError) -> Bool {
        let at = offset
        let b = try readByte(what())
        guard b <= 1 else { throw WireError(.invalidValue, at: at, "\(what()) byte is \(b); a bool is 0 or 1") }
        return b == 1
    }
}

extension Reference {
    // Payload: record name, a flags byte (bit 0 deleteSelf, bit 1 zone follows), then the zone if
    // it differs from the containing record's zone.
    package func payloadSize(zone: RecordZone.ID) -> Int {
        var n = WireSize.string(recordID.name) &+ 1
        if recordID.zone != zone { n &+= WireSize.string(recordID.zone.name) &+ WireSize.string(recordID.zone.owner) }
        return n
    }

    package func encodePayload(into w: inout WireWriter, zone: RecordZone.ID) {
        w.writeString(recordID.name)
        let other = recordID.zone != zone
        w.writeByte(action.rawValue | (other ? 2 : 0))
        if other {
            w.writeString(recordID.zone.name)
            w.writeString(recordID.zone.owner)
        }
    }

    @usableFromInline package static func decodePayload(from r: inout WireReader, zone: RecordZone.ID) throws(WireError)
        -> Reference
    {
        let name = try r.readName("referenced record name")
        let at = r.offset
        let flags = try r.readByte("reference flags")
        guard flags & ~3 == 0 else {
            throw WireError(
                .unknownRequiredTag, at: at,
                "reference flags 0x\(String(flags, radix: 16)) set reserved bits (only 0x01 deleteSelf and 0x02 zone-follows are defined)"
            )
        }
        var z = zone
        if flags & 2 != 0 {
            let zAt = r.offset
            z = RecordZone.ID(
                name: try r.readName("referenced zone name"), owner: try r.readName("referenced zone owner"))
            if z == zone {
                throw WireError(
                    .invalidValue, at: zAt,
                    "reference repeats its record's own zone; canonical form omits it (clear flag 0x02)")
            }
        }
        return Reference(recordID: Record.ID(name: name, zone: z), action: flags & 1 == 0 ? .none : .deleteSelf)
    }
}

extension Asset {
    @usableFromInline package static func decodePayload(from r: inout WireReader) throws(WireError) -> Asset {
        let hash = try r.readContentHash("asset hash")
        let at = r.offset
        let size = try r.readVarint("asset size")
        guard size <= UInt64(Int64.max) else {
            throw WireError(.invalidValue, at: at, "asset size \(size) exceeds 2^63-1")
        }
        return Asset(hash: hash, size: Int64(size))
    }
}

extension Location {
    // Payload: latitude, longitude, a presence byte (bits 0–5: altitude, horizontal accuracy,
    // vertical accuracy, course, speed, timestamp), then each present part in that order.
    var presence: UInt8 {
        var p: UInt8 = 0
        if altitude != nil { p |= 1 }
        if horizontalAccuracy != nil { p |= 2 }
        if verticalAccuracy != nil { p |= 4 }
        if course != nil { p |= 8 }
        if speed != nil { p |= 16 }
        if timestamp != nil { p |= 32 }
        return p
    }

    package var payloadSize: Int {
        var n = 17 &+ 8 &* (presence & 31).nonzeroBitCount
        if let t = timestamp { n &+= WireSize.varint(WireSize.zigzag(t.millisecondsSince1970)) }
        return n
    }

    package func encodePayload(into w: inout WireWriter) {
        w.writeFixed64(CanonicalDouble.bits(latitude))
        w.writeFixed64(CanonicalDouble.bits(longitude))
        w.writeByte(presence)
        // One by one: an array literal of the five would be allocated on every encode.
        if let d = altitude { w.writeFixed64(CanonicalDouble.bits(d)) }
        if let d = horizontalAccuracy { w.writeFixed64(CanonicalDouble.bits(d)) }
        if let d = verticalAccuracy { w.writeFixed64(CanonicalDouble.bits(d)) }
        if let d = course { w.writeFixed64(CanonicalDouble.bits(d)) }
        if let d = speed { w.writeFixed64(CanonicalDouble.bits(d)) }
        if let t = timestamp { w.writeZigzag(t.millisecondsSince1970) }
    }

    @usableFromInline package static func decodePayload(from r: inout WireReader) throws(WireError) -> Location {
        var l = Location(
            latitude: try r.readCanonicalDouble("latitude"), longitude: try r.readCanonicalDouble("longitude"))
        let at = r.offset
        let p = try r.readByte("location presence byte")
        guard p & 0xC0 == 0 else {
            throw WireError(
                .unknownRequiredTag, at: at, "location presence byte 0x\(String(p, radix: 16)) sets reserved bits 6–7")
        }
        if p & 1 != 0 { l.altitude = try r.readCanonicalDouble("altitude") }
        if p & 2 != 0 { l.horizontalAccuracy = try r.readCanonicalDouble("horizontal accuracy") }
        if p & 4 != 0 { l.verticalAccuracy = try r.readCanonicalDouble("vertical accuracy") }
        if p & 8 != 0 { l.course = try r.readCanonicalDouble("course") }
        if p & 16 != 0 { l.speed = try r.readCanonicalDouble("speed") }
        if p & 32 != 0 { l.timestamp = Timestamp(millisecondsSince1970: try r.readZigzag("location timestamp")) }
        return l
    }
}

extension ListValue {
    package func payloadSize(zone: RecordZone.ID) -> Int {
        var n = WireSize.varint(UInt64(count))
        switch self {
        case .string(let v): for s in v { n &+= WireSize.string(s) }
        case .int64(let v): for x in v { n &+= WireSize.varint(WireSize.zigzag(x)) }
        case .double(let v): n &+= 8 &* v.count
        case .bool(let v): n &+= v.count
        case .bytes(let v): for b in v { n &+= WireSize.lengthPrefixed(b.count) }
        case .date(let v): for t in v { n &+= WireSize.varint(WireSize.zigzag(t.millisecondsSince1970)) }
        case .reference(let v): for x in v { n &+= x.payloadSize(zone: zone) }
        case .asset(let v): for a in v { n &+= 32 &+ WireSize.varint(UInt64(bitPattern: a.size)) }
        case .location(let v): for l in v { n &+= l.payloadSize }
        }
        return n
    }

    package func encodePayload(into w: inout WireWriter, zone: RecordZone.ID) {
        w.writeVarint(UInt64(count))
        switch self {
        case .string(let v): for s in v { w.writeString(s) }
        case .int64(let v): for x in v { w.writeZigzag(x) }
        case .double(let v): for d in v { w.writeFixed64(CanonicalDouble.bits(d)) }
        case .bool(let v): for b in v { w.writeByte(b ? 1 : 0) }
        case .bytes(let v): for b in v { w.writeBytes(b) }
        case .date(let v): for t in v { w.writeZigzag(t.millisecondsSince1970) }
        case .reference(let v): for x in v { x.encodePayload(into: &w, zone: zone) }
        case .asset(let v): for a in v { w.writeContentHash(a.hash); w.writeVarint(UInt64(bitPattern: a.size)) }
        case .location(let v): for l in v { l.encodePayload(into: &w) }
        }
    }

    @usableFromInline package static func decodePayload(
        kind: FieldValue.Kind, from r: inout WireReader, zone: RecordZone.ID
    ) throws(WireError) -> ListValue {
        // Every element takes at least one byte, so a count above the bytes left is malformed.
        let n = try r.readCount(max: r.limits.maxListCount, "list element count", limitName: "maxListCount")
        try r.require(n, "\(n) list elements")
        @inline(__always) func many<T>(_ f: (inout WireReader) throws(WireError) -> T) throws(WireError) -> [T] {
            var out = [T]()
            out.reserveCapacity(n)
            for _ in 0..<n { out.append(try f(&r)) }
            return out
        }
        switch kind {
        case .string:
            return .string(
                try many { (r: inout WireReader) throws(WireError) in
                    try r.readString(max: r.limits.maxRecordBytes, "list string", limitName: "maxRecordBytes")
                })
        case .int64:
            return .int64(try many { (r: inout WireReader) throws(WireError) in try r.readZigzag("list int64") })
        case .double:
            try r.require(n, each: 8, "\(n) list doubles")
            return .double(
                try many { (r: inout WireReader) throws(WireError) in try r.readCanonicalDouble("list double") })
        case .bool: return .bool(try many { (r: inout WireReader) throws(WireError) in try r.readBool("list bool") })
        case .bytes:
            return .bytes(
                try many { (r: inout WireReader) throws(WireError) in
                    let len = try r.readLength(
                        max: r.limits.maxRecordBytes, "list bytes length", limitName: "maxRecordBytes")
                    return try r.readBytes(len, "list bytes")
                })
        case .date:
            return .date(
                try many { (r: inout WireReader) throws(WireError) in
                    Timestamp(millisecondsSince1970: try r.readZigzag("list date"))
                })
        case .reference:
            return .reference(
                try many { (r: inout WireReader) throws(WireError) in try Reference.decodePayload(from: &r, zone: zone)
                })
        case .asset:
            try r.require(n, each: 33, "\(n) list assets")
            return .asset(try many { (r: inout WireReader) throws(WireError) in try Asset.decodePayload(from: &r) })
        case .location:
            try r.require(n, each: 17, "\(n) list locations")
            return .location(
                try many { (r: inout WireReader) throws(WireError) in try Location.decodePayload(from: &r) })
        }
    }
}

extension WireReader {
    /// Reads a record, zone or owner name: 1…`maxNameBytes` bytes of UTF-8.
    @inlinable package mutating func readName(_ what: @autoclosure () -> String) throws(WireError) -> String {
        let at = offset
        let s = try readString(max: limits.maxNameBytes, what(), limitName: "maxNameBytes")
        if s.isEmpty {
            throw WireError(.invalidName, at: at, "\(what()) is empty; names are 1–\(limits.maxNameBytes) bytes")
        }
        return s
    }
}

/// CloudKit's rule for record types and field names: an ASCII letter, then letters, digits or `_`.
@usableFromInline package enum Identifier {
    @inlinable package static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let p = bytes.baseAddress, bytes.count > 0, isLetter(p.load(as: UInt8.self)) else { return false }
        var i = 1
        while i < bytes.count {
            let b = p.load(fromByteOffset: i, as: UInt8.self)
            // The allowed bytes as bits of two 64-bit masks (0–63: digits; 64–127: letters and _).
            let mask: UInt64 = b < 64 ? 0x03FF_0000_0000_0000 : 0x07FF_FFFE_87FF_FFFE
            guard b < 128, (mask >> UInt64(b & 63)) & 1 != 0 else { return false }
            i &+= 1
        }
        return true
    }

    @inlinable package static func isLetter(_ b: UInt8) -> Bool { (b | 0x20) >= 97 && (b | 0x20) <= 122 }

    /// ``isValid(_:)`` for a name with `loadable` bytes readable from its start (itself and what
    /// follows it in the input): a name of 1–8 bytes with 8 readable is checked in one 8-byte step.
    @inlinable @inline(__always) package static func isValid(_ bytes: UnsafeRawBufferPointer, loadable: Int) -> Bool {
        let n = bytes.count
        if n > 0 && n <= 8 && loadable >= 8, let p = bytes.baseAddress {
            let word = UInt64(littleEndian: p.loadUnaligned(as: UInt64.self))
            return isLetter(UInt8(truncatingIfNeeded: word)) && allIdentifierBytes(word, count: n)
        }
        return isValid(bytes)
    }

    /// Whether the first `count` (1…8) bytes of `word` (loaded little-endian) are ASCII letters,
    /// digits or `_`: per byte, range tests whose sums never carry into the next byte.
    @inlinable @inline(__always) package static func allIdentifierBytes(_ word: UInt64, count: Int) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, high: UInt64 = 0x8080_8080_8080_8080
        let x = word & 0x7F7F_7F7F_7F7F_7F7F
        let folded = x | 0x2020_2020_2020_2020  // upper case to lower
        let letter = (folded &+ ones &* 0x1F) & ~(folded &+ ones &* 0x05)  // 0x61...0x7A
        let digit = (x &+ ones &* 0x50) & ~(x &+ ones &* 0x46)  // 0x30...0x39
        let y = x ^ 0x5F5F_5F5F_5F5F_5F5F
        let underscore = ~((y &+ 0x7F7F_7F7F_7F7F_7F7F) | y)  // high bit set where y is 0
        let ok = (letter | digit | underscore) & ~word & high
        let wanted = count >= 8 ? high : high & ((1 &<< UInt64(truncatingIfNeeded: count &* 8)) &- 1)
        return ok & wanted == wanted
    }

    /// Whether `name` is a valid record type or field name.
    @usableFromInline package static func isValid(_ name: String) -> Bool {
        var n = name
        return n.withUTF8 { isValid(UnsafeRawBufferPointer($0)) }
    }
}
