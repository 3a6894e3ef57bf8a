// RecordView+Validation: the checks of Record.decode, made without building the record — the
// same errors at the same offsets, and no allocation for names, strings, bytes and numbers.

/// The validating pass behind ``RecordView/withView(of:limits:_:)``: it mirrors
/// `Record.init(reading:)` step for step (Spec/wire-format.md §6), keeping offsets instead of values.
@usableFromInline enum RecordViewValidation {
    /// What the part before the fields holds.
    @usableFromInline struct Header {
        var flags: UInt8
        var recordType: Range<Int>
        var zoneName: Range<Int>, zoneOwner: Range<Int>
        var vector: VectorInPlace
        @usableFromInline var fieldCount: Int
    }

    /// Checks the record's size against the limit, then reads and checks flags, type, ID,
    /// vector, creation stamp, parent and the field count.
    @usableFromInline static func header(_ r: inout WireReader) throws(WireError) -> Header {
        guard r.count <= r.limits.maxRecordBytes else {
            throw WireError(
                .limitExceeded, at: 0,
                "record is \(r.count) bytes, over the limit of \(r.limits.maxRecordBytes) (WireLimits.maxRecordBytes)")
        }
        let flagsAt = r.offset
        let flags = try r.readByte("record flags")
        guard flags & ~Record.Flags.known == 0 else {
            throw WireError(
                .unknownRequiredTag, at: flagsAt,
                "record flags 0x\(String(flags, radix: 16)) set reserved bits; this record needs a newer Shoal")
        }
        let recordType = try identifier(&r, "record type", max: r.limits.maxNameBytes, limitName: "maxNameBytes")
        _ = try name(&r, "record name")
        let zoneName = try name(&r, "zone name")
        let zoneOwner = try name(&r, "zone owner")
        let vv = try HeadedVector.check(from: &r)
        if vv.count > 0 { _ = try r.readStamp(in: vv, "creation stamp") }
        if flags & Record.Flags.parent != 0 {
            try reference(&r, zoneName: zoneName, zoneOwner: zoneOwner)
        }
        let fieldCount = try r.readCount(max: r.limits.maxFieldCount, "field count", limitName: "maxFieldCount")
        try r.require(fieldCount, each: 3, "\(fieldCount) fields")
        return Header(
            flags: flags, recordType: recordType, zoneName: zoneName, zoneOwner: zoneOwner, vector: vv,
            fieldCount: fieldCount)
    }

    /// Checks every field slot, noting where each starts in `table` (and where the fields end
    /// after the last), then the extensions and the end of the input.
    static func fields(_ r: inout WireReader, header: Header, into table: UnsafeMutableBufferPointer<Int>)
        throws(WireError)
    {
        let vv = header.vector
        var previousName = UnsafeRawBufferPointer(start: nil, count: 0)
        var previousPrefix = NamePrefix(previousName, loadable: 0)
        // The previous slot's stamp as (entry index, distance below it): Dots are built only
        // for a repeated name, where concurrent slots must be ordered.
        var previousStamp: (index: Int, back: UInt64)? = nil
        let all = UnsafeRawBufferPointer(start: r.start, count: r.count)
        for i in 0..<header.fieldCount {
            table[i] = r.position
            let at = r.offset
            let n = try r.readLength(
                max: r.limits.maxFieldNameBytes, "field name length", limitName: "maxFieldNameBytes")
            let raw = try r.readRaw(n, "field name")
            let loadable = n &+ r.available
            guard Identifier.isValid(raw, loadable: loadable) else {
                throw WireError(
                    .invalidName, at: at,
                    "field name \(String(decoding: raw, as: UTF8.self).debugDescription) must start with an ASCII letter and contain only letters, digits and _"
                )
            }
            var repeated = false
            let prefix = NamePrefix(raw, loadable: loadable)
            if i > 0 {
                let c = NamePrefix.compare(previousName, previousPrefix, raw, prefix)
                if c > 0 {
                    throw WireError(
                        .unsorted, at: at,
                        "fields must be sorted by name; \(String(decoding: raw, as: UTF8.self)) follows \(String(decoding: previousName, as: UTF8.self))"
                    )
                }
                repeated = c == 0
            }
            previousName = raw
            previousPrefix = prefix
            let tagAt = r.offset
            let tag = try r.readByte("field type tag")
            var stamp: (index: Int, back: UInt64)? = nil
            if tag & Record.stampedBit != 0 {
                guard vv.count > 0 else {
                    throw WireError(
                        .invalidValue, at: tagAt,
                        "field \(String(decoding: raw, as: UTF8.self)) has a stamp but the record has no version vector"
                    )
                }
                stamp = try r.readStamp(in: vv, "stamp of field \(String(decoding: raw, as: UTF8.self))")
            }
            if repeated {
                func dot(_ s: (index: Int, back: UInt64)?) -> Dot? {
                    s.map {
                        Dot(
                            node: vv.node(at: $0.index, in: all),
                            hlc: HLC(rawValue: vv.hlc(at: $0.index, in: all) &- $0.back))
                    }
                }
                try Record.checkConcurrentSlot(
                    String(decoding: raw, as: UTF8.self), previous: dot(previousStamp), stamp: dot(stamp), at: at)
            }
            previousStamp = stamp
            let valueTag = tag & ~Record.stampedBit
            // The commonest kinds here; the rest, lists included, in `value`.
            switch valueTag {
            case 0: break
            case FieldValue.Kind.string.rawValue: try string(&r, "string value")
            case FieldValue.Kind.int64.rawValue: _ = try r.readZigzag("int64 value")
            case FieldValue.Kind.date.rawValue: _ = try r.readZigzag("date value")
            case FieldValue.Kind.bool.rawValue: _ = try r.readBool("bool value")
            case FieldValue.Kind.double.rawValue: _ = try r.readCanonicalDouble("double value")
            default: try value(&r, tag: valueTag, at: tagAt, header: header)
            }
        }
        table[header.fieldCount] = r.position
        if header.flags & Record.Flags.extensions != 0 {
            _ = try r.readExtensions("record")
        }
        try r.expectEnd("the record")
    }

    /// Checks one value as `FieldValue.decodePayload` would — the same errors at the same
    /// offsets — in place: nothing is built, so nothing is allocated.
    static func value(_ r: inout WireReader, tag: UInt8, at tagAt: Int, header: Header) throws(WireError) {
        if tag & ValueTag.listBit != 0 {
            guard let kind = FieldValue.Kind(rawValue: tag & ValueTag.kindMask) else {
                throw FieldValue.undefinedTag(tag, at: tagAt)
            }
            return try list(&r, kind: kind, header: header)
        }
        switch tag {
        case FieldValue.Kind.string.rawValue: try string(&r, "string value")
        case FieldValue.Kind.int64.rawValue: _ = try r.readZigzag("int64 value")
        case FieldValue.Kind.double.rawValue: _ = try r.readCanonicalDouble("double value")
        case FieldValue.Kind.bool.rawValue: _ = try r.readBool("bool value")
        case FieldValue.Kind.bytes.rawValue:
            let n = try r.readLength(max: r.limits.maxRecordBytes, "bytes value length", limitName: "maxRecordBytes")
            _ = try r.readRaw(n, "bytes value")
        case FieldValue.Kind.date.rawValue: _ = try r.readZigzag("date value")
        case FieldValue.Kind.reference.rawValue:
            try reference(&r, zoneName: header.zoneName, zoneOwner: header.zoneOwner)
        case FieldValue.Kind.asset.rawValue: _ = try Asset.decodePayload(from: &r)
        case FieldValue.Kind.location.rawValue: _ = try Location.decodePayload(from: &r)
        default: throw FieldValue.undefinedTag(tag, at: tagAt)
        }
    }

    /// Checks a string value as `WireReader.readString` would (`what` is "string value" or
    /// "list string"), skipping it.
    @inline(__always)
    static func string(_ r: inout WireReader, _ what: StaticString) throws(WireError) {
        let at = r.offset
        let n = try r.readLength(max: r.limits.maxRecordBytes, what.description, limitName: "maxRecordBytes")
        let raw = try r.readRaw(n, what.description)
        guard UTF8Validation.isValid(raw) else { throw WireError(.invalidUTF8, at: at, "\(what) is not valid UTF-8") }
    }

    /// Checks a reference as `Reference.decodePayload` would, comparing a zone it names with the
    /// record's own (at `zoneName` and `zoneOwner` in the reader's bytes) by their bytes.
    static func reference(_ r: inout WireReader, zoneName: Range<Int>, zoneOwner: Range<Int>) throws(WireError) {
        _ = try name(&r, "referenced record name")
        let at = r.offset
        let flags = try r.readByte("reference flags")
        guard flags & ~3 == 0 else {
            throw WireError(
                .unknownRequiredTag, at: at,
                "reference flags 0x\(String(flags, radix: 16)) set reserved bits (only 0x01 deleteSelf and 0x02 zone-follows are defined)"
            )
        }
        guard flags & 2 != 0 else { return }
        let zAt = r.offset
        let otherName = try name(&r, "referenced zone name")
        let otherOwner = try name(&r, "referenced zone owner")
        let all = UnsafeRawBufferPointer(start: r.start, count: r.count)
        if UTF8Order.compare(
            UnsafeRawBufferPointer(rebasing: all[otherName]), UnsafeRawBufferPointer(rebasing: all[zoneName])) == 0
            && UTF8Order.compare(
                UnsafeRawBufferPointer(rebasing: all[otherOwner]), UnsafeRawBufferPointer(rebasing: all[zoneOwner]))
                == 0
        {
            throw WireError(
                .invalidValue, at: zAt,
                "reference repeats its record's own zone; canonical form omits it (clear flag 0x02)")
        }
    }

    /// Checks a list as `ListValue.decodePayload` would, in place.
    static func list(_ r: inout WireReader, kind: FieldValue.Kind, header: Header) throws(WireError) {
        let n = try r.readCount(max: r.limits.maxListCount, "list element count", limitName: "maxListCount")
        try r.require(n, "\(n) list elements")
        switch kind {
        case .string: for _ in 0..<n { try string(&r, "list string") }
        case .int64: for _ in 0..<n { _ = try r.readZigzag("list int64") }
        case .double:
            try r.require(n, each: 8, "\(n) list doubles")
            for _ in 0..<n { _ = try r.readCanonicalDouble("list double") }
        case .bool: for _ in 0..<n { _ = try r.readBool("list bool") }
        case .bytes:
            for _ in 0..<n {
                let length = try r.readLength(
                    max: r.limits.maxRecordBytes, "list bytes length", limitName: "maxRecordBytes")
                _ = try r.readRaw(length, "list bytes")
            }
        case .date: for _ in 0..<n { _ = try r.readZigzag("list date") }
        case .reference:
            for _ in 0..<n { try reference(&r, zoneName: header.zoneName, zoneOwner: header.zoneOwner) }
        case .asset:
            try r.require(n, each: 33, "\(n) list assets")
            for _ in 0..<n { _ = try Asset.decodePayload(from: &r) }
        case .location:
            try r.require(n, each: 17, "\(n) list locations")
            for _ in 0..<n { _ = try Location.decodePayload(from: &r) }
        }
    }

    /// A record type: an identifier, as `WireReader.readIdentifier` checks it.
    static func identifier(_ r: inout WireReader, _ what: String, max limit: Int, limitName: String) throws(WireError)
        -> Range<Int>
    {
        let at = r.offset
        let n = try r.readLength(max: limit, "\(what) length", limitName: limitName)
        let start = r.position
        let raw = try r.readRaw(n, what)
        guard Identifier.isValid(raw, loadable: n &+ r.available) else {
            throw WireError(
                .invalidName, at: at,
                "\(what) \(String(decoding: raw, as: UTF8.self).debugDescription) must start with an ASCII letter and contain only letters, digits and _"
            )
        }
        return start..<r.position
    }

    /// A record, zone or owner name, as `WireReader.readName` checks it.
    static func name(_ r: inout WireReader, _ what: String) throws(WireError) -> Range<Int> {
        let at = r.offset
        let n = try r.readLength(max: r.limits.maxNameBytes, what, limitName: "maxNameBytes")
        let start = r.position
        let raw = try r.readRaw(n, what)
        guard UTF8Validation.isValid(raw) else { throw WireError(.invalidUTF8, at: at, "\(what) is not valid UTF-8") }
        if n == 0 {
            throw WireError(.invalidName, at: at, "\(what) is empty; names are 1–\(r.limits.maxNameBytes) bytes")
        }
        return start..<r.position
    }
}

/// UTF-8 validation in place: what `String(validating:as:)` accepts (no overlong forms, no
/// surrogates, nothing above U+10FFFF), without building a string.
enum UTF8Validation {
    @inline(__always) static func isValid(_ raw: UnsafeRawBufferPointer) -> Bool {
        UTF8Text.isASCII(raw) || isValidBeyondASCII(raw)
    }

    /// ``isValid(_:)`` for bytes that are not all ASCII.
    @inline(never) static func isValidBeyondASCII(_ raw: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        let n = raw.count
        while i < n {
            let b0 = raw[i]
            if b0 < 0x80 { i &+= 1; continue }
            func cont(_ k: Int) -> Bool { i &+ k < n && raw[i &+ k] & 0xC0 == 0x80 }
            switch b0 {
            case 0xC2...0xDF:
                guard cont(1) else { return false }
                i &+= 2
            case 0xE0...0xEF:
                guard cont(1), cont(2) else { return false }
                let b1 = raw[i &+ 1]
                if b0 == 0xE0 && b1 < 0xA0 { return false }
                if b0 == 0xED && b1 > 0x9F { return false }
                i &+= 3
            case 0xF0...0xF4:
                guard cont(1), cont(2), cont(3) else { return false }
                let b1 = raw[i &+ 1]
                if b0 == 0xF0 && b1 < 0x90 { return false }
                if b0 == 0xF4 && b1 > 0x8F { return false }
                i &+= 4
            default:
                return false
            }
        }
        return true
    }
}
