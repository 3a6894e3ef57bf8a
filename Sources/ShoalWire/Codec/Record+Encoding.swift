// Record+Encoding: the canonical bytes of a record (Spec/wire-format.md §5).

extension Record {
    /// Record flags byte: bit 0 parent present, bit 1 extensions present; bits 2–7 reserved.
    enum Flags {
        static let parent: UInt8 = 1
        static let extensions: UInt8 = 2
        static let known: UInt8 = 3
    }

    /// Field slot tag bit 7: a stamp follows the tag.
    static let stampedBit: UInt8 = 0x80

    /// The record's canonical bytes. Equal records always give equal bytes.
    public func encoded() -> [UInt8] {
        WireWriter.encode(size: encodedSize) { encode(into: &$0) }
    }

    /// Decodes a record from its canonical bytes.
    /// - Throws: ``WireError`` for malformed, non-canonical or over-limit input.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        let result: Result<Record, WireError> = bytes.withUnsafeBytes { raw in
            do throws(WireError) { return .success(try Record(decoding: raw, limits: limits)) } catch {
                return .failure(error)
            }
        }
        // Consumed, not copied: `get()` would retain every part of the record once more.
        switch consume result {
        case .success(let record): self = record
        case .failure(let error): throw error
        }
    }

    /// Decodes a record from borrowed bytes.
    /// - Throws: ``WireError`` for malformed, non-canonical or over-limit input.
    public init(decoding buffer: UnsafeRawBufferPointer, limits: WireLimits = .default) throws(WireError) {
        guard buffer.count <= limits.maxRecordBytes else {
            throw WireError(
                .limitExceeded, at: 0,
                "record is \(buffer.count) bytes, over the limit of \(limits.maxRecordBytes) (WireLimits.maxRecordBytes)"
            )
        }
        var r = WireReader(buffer, limits: limits)
        let record = try Record(reading: &r)
        try r.expectEnd("the record")
        self = record
    }

    /// The size in bytes of ``encoded()``, computed without encoding.
    public var encodedSize: Int {
        var n = systemFieldsSize
        // By index into an immutable array: `for f in slots` copies (retains) every slot.
        let s = slots
        for i in 0..<s.count { n &+= slotSize(s[i]) }
        return n &+ extensionsSize
    }

    /// The bytes of ``encoded()`` before the fields: flags, type, ID, vector, creation, parent
    /// and the field count.
    var systemFieldsSize: Int {
        var n = 1 &+ WireSize.string(recordType) &+ WireSize.string(id.name)
        n &+= WireSize.string(id.zone.name) &+ WireSize.string(id.zone.owner)
        n &+= HeadedVector.size(versionVector)
        if !versionVector.isEmpty { n &+= stampSize(creation) }
        if let parent { n &+= parent.payloadSize(zone: id.zone) }
        return n &+ WireSize.varint(UInt64(fields.count))
    }

    /// The bytes of field slot `f` in ``encoded()``.
    @inline(__always) func slotSize(_ f: Field) -> Int {
        var n = WireSize.string(f.name) &+ 1
        if f.stamp != nil { n &+= stampSize(f.stamp) }
        if f.hasValue { n &+= f.valueStorage.payloadSize(zone: id.zone) }
        return n
    }

    /// The bytes of ``encoded()`` after the fields: the extensions.
    var extensionsSize: Int {
        if extensions.isEmpty { return 0 }
        var n = WireSize.varint(UInt64(extensions.count))
        for e in extensions { n &+= WireSize.varint(e.tag) &+ WireSize.lengthPrefixed(e.bytes.count) }
        return n
    }

    func stampSize(_ dot: Dot?) -> Int { StampCoding.size(dot, in: versionVector) }
    func writeStamp(_ dot: Dot?, into w: inout WireWriter) { StampCoding.write(dot, in: versionVector, into: &w) }

    /// Writes ``encoded()`` into `w`.
    package func encode(into w: inout WireWriter) {
        var flags: UInt8 = 0
        if parent != nil { flags |= Flags.parent }
        if !extensions.isEmpty { flags |= Flags.extensions }
        w.writeByte(flags)
        w.writeString(recordType)
        w.writeString(id.name)
        w.writeString(id.zone.name)
        w.writeString(id.zone.owner)
        HeadedVector.write(versionVector, heads: heads, into: &w)
        if !versionVector.isEmpty { writeStamp(creation, into: &w) }
        if let parent { parent.encodePayload(into: &w, zone: id.zone) }
        w.writeVarint(UInt64(slots.count))
        let s = slots
        for i in 0..<s.count {
            w.writeString(s[i].name)
            // The value's storage, not ``Field/value``: the optional it returns would be a copy.
            let hasValue = s[i].hasValue
            let tag = (hasValue ? s[i].valueStorage.tag : 0) | (s[i].stamp != nil ? Record.stampedBit : 0)
            w.writeByte(tag)
            if let stamp = s[i].stamp { writeStamp(stamp, into: &w) }
            if hasValue { s[i].valueStorage.encodePayload(into: &w, zone: id.zone) }
        }
        if !extensions.isEmpty {
            w.writeVarint(UInt64(extensions.count))
            for e in extensions {
                w.writeVarint(e.tag)
                w.writeBytes(e.bytes)
            }
        }
    }

    /// Reads one record from `r`, leaving `r` after it.
    ///
    /// The parts are read into locals, then handed to the memberwise initializer, which stores
    /// them into the result (see ``parentStorage`` for why a decoded record is not copied out).
    @usableFromInline package init(reading r: inout WireReader) throws(WireError) {
        let start = r.position
        let flagsAt = r.offset
        let flags = try r.readByte("record flags")
        guard flags & ~Flags.known == 0 else {
            throw WireError(
                .unknownRequiredTag, at: flagsAt,
                "record flags 0x\(String(flags, radix: 16)) set reserved bits; this record needs a newer Shoal")
        }
        let recordType = try r.readIdentifier("record type", max: r.limits.maxNameBytes, limitName: "maxNameBytes")
        let name = try r.readName("record name")
        let zone = RecordZone.ID(name: try r.readName("zone name"), owner: try r.readName("zone owner"))
        let (vv, heads) = try HeadedVector.read(from: &r)
        let creation: Dot? = vv.isEmpty ? nil : try r.readStamp(vv, "creation stamp")
        let parent: Reference? = flags & Flags.parent != 0 ? try Reference.decodePayload(from: &r, zone: zone) : nil
        let fields = try Record.readSlots(from: &r, versionVector: vv, zone: zone)
        let extensions: [Extension] = flags & Flags.extensions != 0 ? try r.readExtensions("record") : []
        if r.position &- start > r.limits.maxRecordBytes {
            throw WireError(
                .limitExceeded, at: r.base &+ start,
                "record is \(r.position &- start) bytes, over the limit of \(r.limits.maxRecordBytes) (WireLimits.maxRecordBytes)"
            )
        }
        self.init(
            recordType: recordType, id: ID(name: name, zone: zone), parent: parent, creation: creation,
            versionVector: vv, heads: heads, fields: fields, extensions: extensions)
    }

    /// Reads the field slots: a count, then slots increasing by name; a repeated name is a
    /// concurrent slot (stamped, earlier).
    static func readSlots(from r: inout WireReader, versionVector vv: VersionVector, zone: RecordZone.ID)
        throws(WireError) -> [Field]
    {
        let vvCount = vv.count
        let fieldCount = try r.readCount(max: r.limits.maxFieldCount, "field count", limitName: "maxFieldCount")
        try r.require(fieldCount, each: 3, "\(fieldCount) fields")
        var fields = [Field]()
        fields.reserveCapacity(fieldCount)
        var previousName = UnsafeRawBufferPointer(start: nil, count: 0)
        for i in 0..<fieldCount {
            let at = r.offset
            let n = try r.readLength(
                max: r.limits.maxFieldNameBytes, "field name length", limitName: "maxFieldNameBytes")
            let raw = try r.readRaw(n, "field name")
            guard Identifier.isValid(raw, loadable: n &+ r.available) else {
                throw WireError(
                    .invalidName, at: at,
                    "field name \(String(decoding: raw, as: UTF8.self).debugDescription) must start with an ASCII letter and contain only letters, digits and _"
                )
            }
            var repeated = false
            if i > 0 {
                let c = UTF8Order.compare(previousName, raw)
                if c > 0 {
                    throw WireError(
                        .unsorted, at: at,
                        "fields must be sorted by name; \(String(decoding: raw, as: UTF8.self)) follows \(String(decoding: previousName, as: UTF8.self))"
                    )
                }
                repeated = c == 0
            }
            previousName = raw
            let tagAt = r.offset
            let tag = try r.readByte("field type tag")
            var stamp: Dot? = nil
            if tag & Record.stampedBit != 0 {
                guard vvCount > 0 else {
                    throw WireError(
                        .invalidValue, at: tagAt,
                        "field \(String(decoding: raw, as: UTF8.self)) has a stamp but the record has no version vector"
                    )
                }
                stamp = try r.readStamp(vv, "stamp of field \(String(decoding: raw, as: UTF8.self))")
            }
            let fieldName: String
            if repeated {
                fieldName = fields[fields.count &- 1].name
                try Record.checkConcurrentSlot(
                    fieldName, previous: fields[fields.count &- 1].stamp, stamp: stamp, at: at)
            } else {
                fieldName = String(decoding: raw, as: UTF8.self)
            }
            let valueTag = tag & ~Record.stampedBit
            let value: FieldValue? =
                valueTag == 0 ? nil : try FieldValue.decodePayload(tag: valueTag, at: tagAt, from: &r, zone: zone)
            fields.append(Field(name: consume fieldName, value: consume value, stamp: stamp))
        }
        return fields
    }
}

extension WireReader {
    /// Reads a stamp (node index, distance below that node's entry) against `vv`.
    @inlinable package mutating func readStamp(_ vv: VersionVector, _ what: @autoclosure () -> String) throws(WireError)
        -> Dot
    {
        // Fast path: index and offset one byte each, the index inside the vector, the offset 0
        // (below every entry: entries are never zero) — a field set by its node's newest write.
        if position &+ 2 <= count, let start {
            let i = start.load(fromByteOffset: position, as: UInt8.self)
            if i < 0x80 && start.load(fromByteOffset: position &+ 1, as: UInt8.self) == 0 && Int(i) < vv.entries.count {
                position &+= 2
                let e = vv.entries[Int(i)]
                return Dot(node: e.node, hlc: e.hlc)
            }
        }
        return try readStampSlow(vv, what())
    }

    /// ``readStamp(_:_:)`` past its fast path.
    @usableFromInline package mutating func readStampSlow(_ vv: VersionVector, _ what: @autoclosure () -> String)
        throws(WireError) -> Dot
    {
        let at = offset
        let i = try readVarint("\(what()) node index")
        guard i < UInt64(vv.entries.count) else {
            throw WireError(
                .invalidValue, at: at,
                "\(what()) names node index \(i) but the version vector has \(vv.entries.count) entries")
        }
        let e = vv.entries[Int(i)]
        let backAt = offset
        let back = try readVarint("\(what()) timestamp offset")
        guard back < e.hlc.rawValue else {
            throw WireError(
                .invalidValue, at: backAt,
                "\(what()) lies \(back) below an entry of \(e.hlc.rawValue); a stamp's timestamp must be positive")
        }
        return Dot(node: e.node, hlc: HLC(rawValue: e.hlc.rawValue &- back))
    }

    /// Reads a record type or field name: an ASCII letter, then letters, digits or `_`.
    @inlinable package mutating func readIdentifier(
        _ what: @autoclosure () -> String, max limit: Int, limitName: @autoclosure () -> String
    ) throws(WireError) -> String {
        let at = offset
        let n = try readLength(max: limit, "\(what()) length", limitName: limitName())
        let raw = try readRaw(n, what())
        guard Identifier.isValid(raw, loadable: n &+ available) else {
            throw WireError(
                .invalidName, at: at,
                "\(what()) \(String(decoding: raw, as: UTF8.self).debugDescription) must start with an ASCII letter and contain only letters, digits and _"
            )
        }
        return String(decoding: raw, as: UTF8.self)
    }

    /// Reads an extension list: a count ≥ 1, then (tag, length-prefixed bytes) with strictly
    /// increasing tags. Unknown even tags are required and rejected; odd tags are kept.
    package mutating func readExtensions(_ container: String) throws(WireError) -> [Record.Extension] {
        let countAt = offset
        let count = try readCount(max: limits.maxFieldCount, "\(container) extension count", limitName: "maxFieldCount")
        guard count > 0 else {
            throw WireError(
                .invalidValue, at: countAt,
                "\(container) extension flag is set but the list is empty; canonical form clears the flag")
        }
        try require(count, each: 2, "\(count) extensions")
        var out = [Record.Extension]()
        out.reserveCapacity(count)
        var previous: UInt64? = nil
        for _ in 0..<count {
            let at = offset
            let tag = try readVarint("extension tag")
            if let p = previous, tag <= p {
                throw WireError(
                    tag == p ? .duplicate : .unsorted, at: at,
                    "extension tags must strictly increase; \(tag) follows \(p)")
            }
            previous = tag
            if tag & 1 == 0 {
                throw WireError(
                    .unknownRequiredTag, at: at,
                    "\(container) extension tag \(tag) is required (even) and unknown to this version of Shoal")
            }
            let n = try readLength(max: limits.maxBlobBytes, "extension length", limitName: "maxBlobBytes")
            out.append(Record.Extension(tag: tag, bytes: try readBytes(n, "extension bytes")))
        }
        return out
    }
}

extension Record {
    /// The version vector of the record whose canonical encoding starts `bytes`, read without
    /// decoding the rest (names are skipped, not checked; fields are not read). Replication uses
    /// it to skip stored versions a peer already holds without decoding them.
    /// - Throws: ``WireError`` when the bytes up to the vector are malformed or over `limits`.
    public static func versionVector(ofEncoded bytes: UnsafeRawBufferPointer, limits: WireLimits = .default)
        throws(WireError) -> VersionVector
    {
        try headedVector(ofEncoded: bytes, limits: limits).vector
    }

    /// The version vector and heads of a record's canonical encoding, read without decoding the
    /// rest of the record.
    package static func headedVector(ofEncoded bytes: UnsafeRawBufferPointer, limits: WireLimits = .default)
        throws(WireError) -> (vector: VersionVector, heads: [Head])
    {
        var r = WireReader(bytes, limits: limits)
        let flags = try r.readByte("record flags")
        guard flags & ~Flags.known == 0 else {
            throw WireError(
                .unknownRequiredTag, at: 0,
                "record flags 0x\(String(flags, radix: 16)) set reserved bits; this record needs a newer Shoal")
        }
        for what in ["record type", "record name", "zone name", "zone owner"] {
            let n = try r.readLength(max: r.limits.maxNameBytes, what, limitName: "maxNameBytes")
            _ = try r.readRaw(n, what)
        }
        let (vector, heads) = try HeadedVector.read(from: &r)
        return (vector, heads)
    }
}
