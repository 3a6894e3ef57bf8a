// RecordDelta+Encoding: the canonical bytes of a record delta (Spec/wire-format.md, "Record delta").

extension RecordDelta {
    /// Operation tags beyond the record slot tags (which mean "set this slot").
    enum OpTag {
        static let drop: UInt8 = 0x3D
        static let splice: UInt8 = 0x3E
        static let patch: UInt8 = 0x3F
    }

    /// The delta's canonical bytes. `zone` is the zone of the record the delta edits: references
    /// into that zone are written without repeating it.
    public func encoded(zone: RecordZone.ID) -> [UInt8] {
        WireWriter.encode(size: encodedSize(zone: zone)) { encode(into: &$0, zone: zone) }
    }

    /// Decodes a delta of a record in `zone`.
    /// - Throws: ``WireError`` for malformed, non-canonical or over-limit input.
    public init(decoding bytes: [UInt8], zone: RecordZone.ID, limits: WireLimits = .default) throws(WireError) {
        let result: Result<RecordDelta, WireError> = bytes.withUnsafeBytes { raw in
            var r = WireReader(raw, limits: limits)
            do throws(WireError) {
                let d = try RecordDelta.decode(from: &r, zone: zone)
                try r.expectEnd("the record delta")
                return .success(d)
            } catch { return .failure(error) }
        }
        self = try result.get()
    }

    var stampVector: VersionVector { system?.versionVector ?? VersionVector() }

    package func encodedSize(zone: RecordZone.ID) -> Int {
        var n = 1 &+ 4
        let vv = stampVector
        if let s = system {
            n &+= WireSize.string(s.recordType) &+ 1
            if let p = s.parent { n &+= p.payloadSize(zone: zone) }
            n &+= HeadedVector.size(s.versionVector)
            if !s.versionVector.isEmpty { n &+= StampCoding.size(s.creation, in: vv) }
            n &+= 1
            if !s.extensions.isEmpty {
                n &+= WireSize.varint(UInt64(s.extensions.count))
                for e in s.extensions { n &+= WireSize.varint(e.tag) &+ WireSize.lengthPrefixed(e.bytes.count) }
            }
        }
        n &+= WireSize.varint(UInt64(operations.count))
        for op in operations {
            n &+= WireSize.string(op.fieldName) &+ 1
            switch op {
            case .set(let f):
                if f.stamp != nil { n &+= StampCoding.size(f.stamp, in: vv) }
                if let v = f.value { n &+= v.payloadSize(zone: zone) }
            case .drop:
                break
            case .splice(_, let stamp, let edits):
                if stamp != nil { n &+= StampCoding.size(stamp, in: vv) }
                n &+= Self.spliceBodySize(edits, zone: zone)
            case .patch(_, let stamp, let edits):
                if stamp != nil { n &+= StampCoding.size(stamp, in: vv) }
                n &+= Self.patchBodySize(edits)
            }
        }
        return n
    }

    package func encode(into w: inout WireWriter, zone: RecordZone.ID) {
        w.writeByte(system == nil ? 0 : 1)
        w.writeFixed32(baseTag)
        let vv = stampVector
        if let s = system {
            w.writeString(s.recordType)
            if let p = s.parent {
                w.writeByte(1)
                p.encodePayload(into: &w, zone: zone)
            } else {
                w.writeByte(0)
            }
            HeadedVector.write(s.versionVector, heads: s.heads, into: &w)
            if !s.versionVector.isEmpty { StampCoding.write(s.creation, in: vv, into: &w) }
            if s.extensions.isEmpty {
                w.writeByte(0)
            } else {
                w.writeByte(1)
                w.writeVarint(UInt64(s.extensions.count))
                for e in s.extensions {
                    w.writeVarint(e.tag)
                    w.writeBytes(e.bytes)
                }
            }
        }
        w.writeVarint(UInt64(operations.count))
        for op in operations {
            w.writeString(op.fieldName)
            switch op {
            case .set(let f):
                w.writeByte((f.value?.tag ?? 0) | (f.stamp != nil ? Record.stampedBit : 0))
                if f.stamp != nil { StampCoding.write(f.stamp, in: vv, into: &w) }
                if let v = f.value { v.encodePayload(into: &w, zone: zone) }
            case .drop:
                w.writeByte(OpTag.drop)
            case .splice(_, let stamp, let edits):
                w.writeByte(OpTag.splice | (stamp != nil ? Record.stampedBit : 0))
                if stamp != nil { StampCoding.write(stamp, in: vv, into: &w) }
                Self.writeSpliceBody(edits, kind: edits.first?.insert.elementKind ?? .string, zone: zone, into: &w)
            case .patch(_, let stamp, let edits):
                w.writeByte(OpTag.patch | (stamp != nil ? Record.stampedBit : 0))
                if stamp != nil { StampCoding.write(stamp, in: vv, into: &w) }
                Self.writePatchBody(edits, into: &w)
            }
        }
    }

    package static func decode(from r: inout WireReader, zone: RecordZone.ID) throws(WireError) -> RecordDelta {
        let flagsAt = r.offset
        let flags = try r.readByte("delta flags")
        guard flags & ~1 == 0 else {
            throw WireError(
                .unknownRequiredTag, at: flagsAt,
                "delta flags 0x\(String(flags, radix: 16)) set reserved bits; this delta needs a newer Shoal")
        }
        let baseTag = try r.readFixed32("delta base tag")
        var system: SystemFields? = nil
        if flags & 1 != 0 {
            let recordType = try r.readIdentifier("record type", max: r.limits.maxNameBytes, limitName: "maxNameBytes")
            let pAt = r.offset
            let parent: Reference?
            switch try r.readByte("parent flag") {
            case 0: parent = nil
            case 1: parent = try Reference.decodePayload(from: &r, zone: zone)
            case let b: throw WireError(.invalidValue, at: pAt, "parent flag is \(b); it is 0 or 1")
            }
            let (vv, heads) = try HeadedVector.read(from: &r)
            let creation: Dot? = vv.isEmpty ? nil : try r.readStamp(vv, "creation stamp")
            let eAt = r.offset
            let extensions: [Record.Extension]
            switch try r.readByte("extensions flag") {
            case 0: extensions = []
            case 1: extensions = try r.readExtensions("delta")
            case let b: throw WireError(.invalidValue, at: eAt, "extensions flag is \(b); it is 0 or 1")
            }
            system = SystemFields(
                recordType: recordType, parent: parent, creation: creation, versionVector: vv,
                heads: heads, extensions: extensions)
        }
        let vv = system?.versionVector ?? VersionVector()
        let count = try r.readCount(
            max: r.limits.maxDeltaOperations, "delta operation count", limitName: "maxDeltaOperations")
        try r.require(count, each: 3, "\(count) delta operations")
        var ops = [Operation]()
        ops.reserveCapacity(count)
        var previous = ""
        for i in 0..<count {
            let at = r.offset
            let name = try r.readIdentifier(
                "field name", max: r.limits.maxFieldNameBytes, limitName: "maxFieldNameBytes")
            var repeated = false
            if i > 0 {
                let c = UTF8Order.compare(previous, name)
                if c > 0 {
                    throw WireError(
                        .unsorted, at: at, "delta operations must be sorted by field name; \(name) follows \(previous)")
                }
                repeated = c == 0
            }
            previous = name
            let tagAt = r.offset
            let tag = try r.readByte("operation tag")
            let stamped = tag & Record.stampedBit != 0
            let low = tag & ~Record.stampedBit
            var stamp: Dot? = nil
            if stamped {
                guard !vv.isEmpty, low != OpTag.drop else {
                    throw WireError(
                        .invalidValue, at: tagAt,
                        "operation on \(name) is stamped but the delta carries no version vector (or is a drop)")
                }
                stamp = try r.readStamp(vv, "stamp of \(name)")
            }
            if repeated {
                // Only sets of concurrent slots repeat a name: stamped, the later first.
                guard case .set(let last)? = ops.last, low != OpTag.drop, low != OpTag.splice, low != OpTag.patch else {
                    throw WireError(
                        .duplicate, at: at,
                        "two operations on field \(name); only sets of concurrent slots, each stamped, may repeat a name"
                    )
                }
                try Record.checkConcurrentSlot(name, previous: last.stamp, stamp: stamp, at: at)
            }
            switch low {
            case OpTag.drop:
                ops.append(.drop(name: name))
            case OpTag.splice:
                ops.append(.splice(name: name, stamp: stamp, edits: try decodeSplices(from: &r, zone: zone)))
            case OpTag.patch:
                ops.append(.patch(name: name, stamp: stamp, edits: try decodePatches(from: &r)))
            default:
                let value: FieldValue? =
                    low == 0 ? nil : try FieldValue.decodePayload(tag: low, at: tagAt, from: &r, zone: zone)
                ops.append(.set(Record.Field(name: name, value: value, stamp: stamp)))
            }
        }
        return RecordDelta(baseTag: baseTag, system: system, operations: ops)
    }

    /// The size of a splice body (wire-format §7.4): element kind, count, edits.
    static func spliceBodySize(_ edits: [ListSplice], zone: RecordZone.ID) -> Int {
        var n = 1 &+ WireSize.varint(UInt64(edits.count))
        for e in edits {
            n &+=
                WireSize.varint(UInt64(e.offset)) &+ WireSize.varint(UInt64(e.deleteCount))
                &+ e.insert.payloadSize(zone: zone)
        }
        return n
    }

    /// The size of a patch body (wire-format §7.4): target kind, count, edits.
    static func patchBodySize(_ edits: [BytePatch]) -> Int {
        var n = 1 &+ WireSize.varint(UInt64(edits.count))
        for e in edits {
            n &+=
                WireSize.varint(UInt64(e.offset)) &+ WireSize.varint(UInt64(e.deleteCount))
                &+ WireSize.lengthPrefixed(e.insert.count)
        }
        return n
    }

    /// Writes a splice body of a list of `kind` (wire-format §7.4).
    static func writeSpliceBody(
        _ edits: [ListSplice], kind: FieldValue.Kind, zone: RecordZone.ID, into w: inout WireWriter
    ) {
        w.writeByte(kind.rawValue)
        w.writeVarint(UInt64(edits.count))
        for e in edits {
            w.writeVarint(UInt64(e.offset))
            w.writeVarint(UInt64(e.deleteCount))
            e.insert.encodePayload(into: &w, zone: zone)
        }
    }

    /// Writes a patch body (wire-format §7.4): target kind 5, then the edits.
    static func writePatchBody(_ edits: [BytePatch], into w: inout WireWriter) {
        w.writeByte(FieldValue.Kind.bytes.rawValue)
        w.writeVarint(UInt64(edits.count))
        for e in edits {
            w.writeVarint(UInt64(e.offset))
            w.writeVarint(UInt64(e.deleteCount))
            w.writeBytes(e.insert)
        }
    }

    /// Edits of one field must be non-empty, in increasing order, and not touch each other
    /// (touching edits are one edit), so each edit list has one encoding.
    static func checkEditOrder(
        _ offset: Int, _ deleteCount: Int, _ insertCount: Int, previousEnd: Int?, at: Int, r: WireReader
    ) throws(WireError) {
        if deleteCount == 0 && insertCount == 0 {
            throw WireError(
                .invalidValue, at: at, "an edit that deletes and inserts nothing is omitted in canonical form")
        }
        if let end = previousEnd, offset <= end {
            throw WireError(
                .unsorted, at: at,
                "edits must be in increasing order with a gap; edit at \(offset) follows one ending at \(end)")
        }
    }

    static func decodeSplices(from r: inout WireReader, zone: RecordZone.ID) throws(WireError) -> [ListSplice] {
        let kAt = r.offset
        let k = try r.readByte("splice element kind")
        guard let kind = FieldValue.Kind(rawValue: k) else {
            throw WireError(.unknownRequiredTag, at: kAt, "splice element kind \(k) is not a scalar kind (1–9)")
        }
        let cAt = r.offset
        let n = try r.readCount(max: r.limits.maxListCount, "splice count", limitName: "maxListCount")
        guard n > 0 else { throw WireError(.invalidValue, at: cAt, "a splice operation has at least one edit") }
        try r.require(n, each: 3, "\(n) splices")
        var out = [ListSplice]()
        out.reserveCapacity(n)
        var end: Int? = nil
        for _ in 0..<n {
            let at = r.offset
            let offset = try r.readCount(max: r.limits.maxListCount, "splice offset", limitName: "maxListCount")
            let del = try r.readCount(max: r.limits.maxListCount, "splice delete count", limitName: "maxListCount")
            let insert = try ListValue.decodePayload(kind: kind, from: &r, zone: zone)
            try checkEditOrder(offset, del, insert.count, previousEnd: end, at: at, r: r)
            end = offset &+ del
            out.append(ListSplice(offset: offset, deleteCount: del, insert: insert))
        }
        return out
    }

    static func decodePatches(from r: inout WireReader) throws(WireError) -> [BytePatch] {
        let kAt = r.offset
        let k = try r.readByte("patch target kind")
        guard k == FieldValue.Kind.bytes.rawValue else {
            throw WireError(
                .unknownRequiredTag, at: kAt, "patch target kind \(k) is not 5 (bytes of a string or bytes value)")
        }
        let cAt = r.offset
        let n = try r.readCount(max: r.limits.maxDeltaOperations, "patch count", limitName: "maxDeltaOperations")
        guard n > 0 else { throw WireError(.invalidValue, at: cAt, "a patch operation has at least one edit") }
        try r.require(n, each: 3, "\(n) patches")
        var out = [BytePatch]()
        out.reserveCapacity(n)
        var end: Int? = nil
        for _ in 0..<n {
            let at = r.offset
            let offset = try r.readCount(max: r.limits.maxRecordBytes, "patch offset", limitName: "maxRecordBytes")
            let del = try r.readCount(max: r.limits.maxRecordBytes, "patch delete count", limitName: "maxRecordBytes")
            let len = try r.readLength(max: r.limits.maxRecordBytes, "patch insert length", limitName: "maxRecordBytes")
            let insert = try r.readBytes(len, "patch insert bytes")
            try checkEditOrder(offset, del, insert.count, previousEnd: end, at: at, r: r)
            end = offset &+ del
            out.append(BytePatch(offset: offset, deleteCount: del, insert: insert))
        }
        return out
    }
}
