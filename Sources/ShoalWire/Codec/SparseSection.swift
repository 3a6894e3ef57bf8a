// SparseSection: the sparse records of a changes batch — base vector, tables, then items
// (Spec/replication.md §3.5.1).

/// Encodes and decodes the sparse section of a ``ChangesMessage``.
///
/// Layout: the base vector (plain vector); the node table (count ≥ 1, node IDs strictly
/// increasing); the record-type table and the field-name table (count, then identifiers strictly
/// increasing by UTF-8 bytes; the type table has at least one entry); the item count (≥ 1); the
/// items. Every table entry is used by at least one item. An item is:
///
/// ```
/// flags (1 byte: bit 0 parent, bit 1 heads follow, bit 2 stamps follow, bit 3 extensions;
///        bits 4-7 reserved)
/// name: shared prefix with the previous item's name (varint, maximal), suffix (length-prefixed)
/// record type (table index) | [parent payload]
/// entries: count ≥ 1, then per entry: node (table index, strictly increasing),
///          zigzag(timestamp − base[node])
/// [heads: count ≥ 1, then per head: entry index (strictly increasing), state (1 save, 2 delete)]
/// digest of the omitted parts (fixed64, ``SparseRecord/OmittedDigest``)
/// fields: count, then per field: name (table index, increasing; a repeat is a concurrent slot,
///         its stamp earlier than the previous slot's), value tag (0 = removed),
///         [stamp: entry index, offset below that entry], value payload
/// [extensions, as in a record]
/// ```
/// Without bit 1 the item has exactly one entry and its node is the only head, a save. Without
/// bit 2 the item has exactly one entry and every field is stamped with that entry's dot.
/// Canonical encoders clear bits 1 and 2 whenever those defaults hold.
package enum SparseSection {
    enum Flags {
        static let parent: UInt8 = 1
        static let heads: UInt8 = 2
        static let stamps: UInt8 = 4
        static let extensions: UInt8 = 8
        static let known: UInt8 = 15
    }

    /// The tables an encoding uses, built once for both passes.
    struct Tables {
        var nodes: [NodeID]
        var types: [String]
        var names: [String]

        init(_ items: [SparseRecord]) {
            var nodes = Set<NodeID>(), types = Set<String>(), names = Set<String>()
            for s in items {
                types.insert(s.recordType)
                for e in s.entries.entries { nodes.insert(e.node) }
                for f in s.fields { names.insert(f.name) }
                for d in s.deltas { names.insert(d.name) }
            }
            self.nodes = nodes.sorted()
            self.types = types.sorted { UTF8Order.compare($0, $1) < 0 }
            self.names = names.sorted { UTF8Order.compare($0, $1) < 0 }
        }

        static func index(_ s: String, in table: [String]) -> Int {
            var lo = 0, hi = table.count
            while lo < hi {
                let mid = (lo &+ hi) >> 1
                if UTF8Order.compare(table[mid], s) < 0 { lo = mid &+ 1 } else { hi = mid }
            }
            return lo
        }

        func node(_ n: NodeID) -> Int {
            var lo = 0, hi = nodes.count
            while lo < hi {
                let mid = (lo &+ hi) >> 1
                if nodes[mid] < n { lo = mid &+ 1 } else { hi = mid }
            }
            return lo
        }
    }

    static func flags(_ s: SparseRecord) -> UInt8 {
        var f: UInt8 = 0
        if s.parent != nil { f |= Flags.parent }
        if !defaultHeads(s) { f |= Flags.heads }
        if !defaultStamps(s) { f |= Flags.stamps }
        if !s.extensions.isEmpty { f |= Flags.extensions }
        return f
    }

    static func defaultHeads(_ s: SparseRecord) -> Bool {
        s.entries.count == 1 && s.heads.count == 1 && s.heads[0].node == s.entries.entries[0].node
            && !s.heads[0].isDeletion
    }

    static func defaultStamps(_ s: SparseRecord) -> Bool {
        guard s.entries.count == 1 else { return false }
        let e = s.entries.entries[0]
        let dot = Dot(node: e.node, hlc: e.hlc)
        return s.fields.allSatisfy { $0.stamp == dot } && s.deltas.allSatisfy { $0.stamp == dot }
    }

    /// Value tags of delta slots (Spec/replication.md §3.5.1): the operation tags of a record
    /// delta (wire-format §7.3), which are not value tags.
    enum DeltaTag {
        static let splice: UInt8 = 0x3E
        static let patch: UInt8 = 0x3F
    }

    /// An item's slots in name order: its whole slots and its delta slots.
    enum Slot {
        case whole(Record.Field)
        case delta(SparseRecord.FieldDelta)

        var name: String {
            switch self {
            case .whole(let f): return f.name
            case .delta(let d): return d.name
            }
        }
    }

    static func slots(_ s: SparseRecord) -> [Slot] {
        guard !s.deltas.isEmpty else { return s.fields.map(Slot.whole) }
        var out = [Slot]()
        out.reserveCapacity(s.fields.count &+ s.deltas.count)
        var i = 0, j = 0
        while i < s.fields.count || j < s.deltas.count {
            if j == s.deltas.count || i < s.fields.count && UTF8Order.compare(s.fields[i].name, s.deltas[j].name) < 0 {
                out.append(.whole(s.fields[i]))
                i &+= 1
            } else {
                out.append(.delta(s.deltas[j]))
                j &+= 1
            }
        }
        return out
    }

    /// The size of a delta slot after its stamp: base stamp, base digest, body.
    package static func deltaBodySize(_ d: SparseRecord.FieldDelta, entries: VersionVector, zone: RecordZone.ID) -> Int
    {
        let (i, back) = stampParts(d.baseStamp, in: entries)
        let n = WireSize.varint(UInt64(i)) &+ WireSize.varint(back) &+ 4
        switch d.edit {
        case .patch(let edits): return n &+ RecordDelta.patchBodySize(edits)
        case .splice(_, let edits): return n &+ RecordDelta.spliceBodySize(edits, zone: zone)
        }
    }

    static func writeDeltaBody(
        _ d: SparseRecord.FieldDelta, entries: VersionVector, zone: RecordZone.ID, into w: inout WireWriter
    ) {
        let (i, back) = stampParts(d.baseStamp, in: entries)
        w.writeVarint(UInt64(i))
        w.writeVarint(back)
        w.writeFixed32(d.baseDigest)
        switch d.edit {
        case .patch(let edits): RecordDelta.writePatchBody(edits, into: &w)
        case .splice(let kind, let edits): RecordDelta.writeSpliceBody(edits, kind: kind, zone: zone, into: &w)
        }
    }

    static func sharedPrefix(_ a: String, _ b: String) -> Int {
        var a = a, b = b
        return a.withUTF8 { pa in
            b.withUTF8 { pb in
                var i = 0
                let n = min(pa.count, pb.count)
                while i < n && pa[i] == pb[i] { i &+= 1 }
                return i
            }
        }
    }

    static func delta(_ e: VersionVector.Entry, base: VersionVector) -> Int64 {
        Int64(bitPattern: e.hlc.rawValue &- base[e.node].rawValue)
    }

    static func stampParts(_ dot: Dot?, in entries: VersionVector) -> (Int, UInt64) {
        guard let dot, let i = entries.index(of: dot.node) else { return (0, 0) }
        return (i, entries.entries[i].hlc.rawValue &- dot.hlc.rawValue)
    }

    /// The base's size: a plain vector, or its changes from `reference` (a `live-changes` batch
    /// whose vectors are written against the stated knowledge, Spec/replication.md §3.5.4).
    static func baseSize(_ base: VersionVector, reference: VersionVector?) -> Int {
        guard let reference else { return WireSize.plainVector(base) }
        return VectorChange.size(VectorChange.changes(from: reference, to: base), against: reference)
    }

    /// The section's size in bytes; the base is written against `reference` when there is one.
    package static func size(
        _ items: [SparseRecord], base: VersionVector, reference: VersionVector? = nil, zone: RecordZone.ID
    ) -> Int {
        let t = Tables(items)
        var n = baseSize(base, reference: reference) &+ WireSize.varint(UInt64(t.nodes.count)) &+ 16 &* t.nodes.count
        n &+= WireSize.varint(UInt64(t.types.count)) &+ WireSize.varint(UInt64(t.names.count))
        for s in t.types { n &+= WireSize.string(s) }
        for s in t.names { n &+= WireSize.string(s) }
        n &+= WireSize.varint(UInt64(items.count))
        var previous = ""
        for s in items {
            let flags = flags(s)
            let shared = sharedPrefix(previous, s.id.name)
            n &+= 1 &+ WireSize.varint(UInt64(shared)) &+ WireSize.lengthPrefixed(s.id.name.utf8.count &- shared)
            n &+= WireSize.varint(UInt64(Tables.index(s.recordType, in: t.types)))
            if let p = s.parent { n &+= p.payloadSize(zone: zone) }
            n &+= WireSize.varint(UInt64(s.entries.count))
            for e in s.entries.entries {
                n &+= WireSize.varint(UInt64(t.node(e.node))) &+ WireSize.varint(WireSize.zigzag(delta(e, base: base)))
            }
            if flags & Flags.heads != 0 {
                n &+= WireSize.varint(UInt64(s.heads.count))
                for h in s.heads { n &+= WireSize.varint(UInt64(s.entries.index(of: h.node) ?? 0)) &+ 1 }
            }
            n &+= 8
            n &+= WireSize.varint(UInt64(s.fields.count &+ s.deltas.count))
            for slot in slots(s) {
                n &+= WireSize.varint(UInt64(Tables.index(slot.name, in: t.names))) &+ 1
                switch slot {
                case .whole(let f):
                    if flags & Flags.stamps != 0 {
                        let (i, back) = stampParts(f.stamp, in: s.entries)
                        n &+= WireSize.varint(UInt64(i)) &+ WireSize.varint(back)
                    }
                    if let v = f.value { n &+= v.payloadSize(zone: zone) }
                case .delta(let d):
                    if flags & Flags.stamps != 0 {
                        let (i, back) = stampParts(d.stamp, in: s.entries)
                        n &+= WireSize.varint(UInt64(i)) &+ WireSize.varint(back)
                    }
                    n &+= deltaBodySize(d, entries: s.entries, zone: zone)
                }
            }
            if !s.extensions.isEmpty {
                n &+= WireSize.varint(UInt64(s.extensions.count))
                for e in s.extensions { n &+= WireSize.varint(e.tag) &+ WireSize.lengthPrefixed(e.bytes.count) }
            }
            previous = s.id.name
        }
        return n
    }

    /// Writes the section; the base is written against `reference` when there is one.
    package static func write(
        _ items: [SparseRecord], base: VersionVector, reference: VersionVector? = nil, zone: RecordZone.ID,
        into w: inout WireWriter
    ) {
        let t = Tables(items)
        if let reference {
            VectorChange.write(VectorChange.changes(from: reference, to: base), against: reference, into: &w)
        } else {
            w.writePlainVector(base)
        }
        w.writeVarint(UInt64(t.nodes.count))
        for node in t.nodes { w.writeNodeID(node) }
        w.writeVarint(UInt64(t.types.count))
        for s in t.types { w.writeString(s) }
        w.writeVarint(UInt64(t.names.count))
        for s in t.names { w.writeString(s) }
        w.writeVarint(UInt64(items.count))
        var previous = ""
        for s in items {
            let flags = flags(s)
            w.writeByte(flags)
            let shared = sharedPrefix(previous, s.id.name)
            w.writeVarint(UInt64(shared))
            w.writeBytes(s.id.name.utf8.dropFirst(shared))
            w.writeVarint(UInt64(Tables.index(s.recordType, in: t.types)))
            if let p = s.parent { p.encodePayload(into: &w, zone: zone) }
            w.writeVarint(UInt64(s.entries.count))
            for e in s.entries.entries {
                w.writeVarint(UInt64(t.node(e.node)))
                w.writeVarint(WireSize.zigzag(delta(e, base: base)))
            }
            if flags & Flags.heads != 0 {
                w.writeVarint(UInt64(s.heads.count))
                for h in s.heads {
                    w.writeVarint(UInt64(s.entries.index(of: h.node) ?? 0))
                    w.writeByte(h.isDeletion ? 2 : 1)
                }
            }
            w.writeFixed64(s.digest)
            w.writeVarint(UInt64(s.fields.count &+ s.deltas.count))
            for slot in slots(s) {
                w.writeVarint(UInt64(Tables.index(slot.name, in: t.names)))
                switch slot {
                case .whole(let f):
                    w.writeByte(f.value?.tag ?? 0)
                    if flags & Flags.stamps != 0 {
                        let (i, back) = stampParts(f.stamp, in: s.entries)
                        w.writeVarint(UInt64(i))
                        w.writeVarint(back)
                    }
                    if let v = f.value { v.encodePayload(into: &w, zone: zone) }
                case .delta(let d):
                    w.writeByte(d.edit.isPatch ? DeltaTag.patch : DeltaTag.splice)
                    if flags & Flags.stamps != 0 {
                        let (i, back) = stampParts(d.stamp, in: s.entries)
                        w.writeVarint(UInt64(i))
                        w.writeVarint(back)
                    }
                    writeDeltaBody(d, entries: s.entries, zone: zone, into: &w)
                }
            }
            if !s.extensions.isEmpty {
                w.writeVarint(UInt64(s.extensions.count))
                for e in s.extensions {
                    w.writeVarint(e.tag)
                    w.writeBytes(e.bytes)
                }
            }
            previous = s.id.name
        }
    }

    /// Reads a section, checking order, table use, canonical flags and maximal name prefixes; the
    /// base is read as changes to `reference` when there is one.
    package static func read(from r: inout WireReader, reference: VersionVector? = nil, zone: RecordZone.ID)
        throws(WireError) -> (VersionVector, [SparseRecord])
    {
        let base: VersionVector
        if let reference {
            base = VectorChange.applying(
                try VectorChange.read(&r, against: reference, meaning: .changes, "sparse base"), to: reference)
        } else {
            base = try r.readPlainVector("sparse base vector")
        }
        let nodesAt = r.offset
        let nodeCount = try r.readCount(
            max: r.limits.maxVectorEntries, "sparse node table count", limitName: "maxVectorEntries")
        guard nodeCount > 0 else {
            throw WireError(
                .invalidValue, at: nodesAt,
                "the sparse node table is empty; every sparse record has at least one vector entry")
        }
        try r.require(nodeCount, each: 16, "\(nodeCount) sparse node table entries")
        var nodes = [NodeID]()
        nodes.reserveCapacity(nodeCount)
        for _ in 0..<nodeCount {
            let at = r.offset
            let node = try r.readNodeID("sparse node table entry")
            if let p = nodes.last, node <= p {
                throw WireError(
                    node == p ? .duplicate : .unsorted, at: at,
                    "sparse node table entries must strictly increase; \(node) follows \(p)")
            }
            nodes.append(node)
        }
        let typesAt = r.offset
        let types = try readTable(&r, "sparse record type table", max: r.limits.maxNameBytes, limitName: "maxNameBytes")
        guard !types.isEmpty else {
            throw WireError(
                .invalidValue, at: typesAt, "the sparse record type table is empty; every sparse record has a type")
        }
        let namesAt = r.offset
        let names = try readTable(
            &r, "sparse field name table", max: r.limits.maxFieldNameBytes, limitName: "maxFieldNameBytes")
        let countAt = r.offset
        let count = try r.readCount(max: r.limits.maxMessageItems, "sparse record count", limitName: "maxMessageItems")
        guard count > 0 else {
            throw WireError(
                .invalidValue, at: countAt, "the sparse section has no records; canonical form leaves the section out")
        }
        try r.require(count, each: 6, "\(count) sparse records")
        var usedNodes = [Bool](repeating: false, count: nodes.count)
        var usedTypes = [Bool](repeating: false, count: types.count)
        var usedNames = [Bool](repeating: false, count: names.count)
        var items = [SparseRecord]()
        items.reserveCapacity(min(count, 4096))
        var previous = [UInt8]()
        for _ in 0..<count {
            let flagsAt = r.offset
            let flags = try r.readByte("sparse record flags")
            guard flags & ~Flags.known == 0 else {
                throw WireError(
                    .unknownRequiredTag, at: flagsAt,
                    "sparse record flags 0x\(String(flags, radix: 16)) set reserved bits; this batch needs a newer Shoal"
                )
            }
            // The name: a prefix shared with the previous item's name, then the rest.
            let sharedAt = r.offset
            let shared = try r.readVarint("shared name prefix")
            guard shared <= UInt64(previous.count) else {
                throw WireError(
                    .invalidValue, at: sharedAt,
                    "the name shares \(shared) bytes with a previous name of \(previous.count) bytes")
            }
            let suffixAt = r.offset
            let suffixCount = try r.readLength(
                max: r.limits.maxNameBytes, "record name suffix length", limitName: "maxNameBytes")
            let suffix = try r.readRaw(suffixCount, "record name suffix")
            let keep = Int(shared)
            if keep < previous.count, let first = suffix.first, first == previous[keep] {
                throw WireError(
                    .invalidValue, at: suffixAt,
                    "the name's shared prefix is not maximal; canonical form shares every common leading byte")
            }
            var nameBytes = [UInt8](previous.prefix(keep))
            nameBytes.append(contentsOf: suffix)
            guard !nameBytes.isEmpty, nameBytes.count <= r.limits.maxNameBytes else {
                throw WireError(
                    nameBytes.isEmpty ? .invalidName : .limitExceeded, at: sharedAt,
                    "a record name is 1–\(r.limits.maxNameBytes) bytes (WireLimits.maxNameBytes); this one is \(nameBytes.count)"
                )
            }
            guard let name = nameBytes.withUnsafeBytes({ UTF8Text.string($0) }) else {
                throw WireError(.invalidUTF8, at: sharedAt, "the record name is not valid UTF-8")
            }
            previous = nameBytes
            let id = Record.ID(name: name, zone: zone)

            let typeAt = r.offset
            let typeIndex = try r.readVarint("record type index")
            guard typeIndex < UInt64(types.count) else {
                throw WireError(
                    .invalidValue, at: typeAt, "record type index \(typeIndex) is outside the table of \(types.count)")
            }
            usedTypes[Int(typeIndex)] = true
            let parent: Reference? = flags & Flags.parent != 0 ? try Reference.decodePayload(from: &r, zone: zone) : nil

            let entriesAt = r.offset
            let entryCount = try r.readCount(
                max: r.limits.maxVectorEntries, "sparse entry count", limitName: "maxVectorEntries")
            guard entryCount > 0 else {
                throw WireError(.invalidValue, at: entriesAt, "a sparse record has at least one vector entry")
            }
            try r.require(entryCount, each: 2, "\(entryCount) sparse entries")
            var entries = [VersionVector.Entry]()
            entries.reserveCapacity(entryCount)
            var lastNode = -1
            for _ in 0..<entryCount {
                let ni = try readIndex(&r, after: &lastNode, table: nodes.count, "entry node index")
                usedNodes[ni] = true
                let node = nodes[ni]
                let dAt = r.offset
                let d = try r.readZigzag("entry timestamp difference")
                // Modulo 2^64, so every timestamp has exactly one encoding.
                let h = base[node].rawValue &+ UInt64(bitPattern: d)
                guard h != 0 else {
                    throw WireError(.invalidValue, at: dAt, "entry for \(node) is zero; zero entries are omitted")
                }
                entries.append(VersionVector.Entry(node: node, hlc: HLC(rawValue: h)))
            }
            let vv = VersionVector(sortedEntries: entries)

            var heads = [Record.Head]()
            if flags & Flags.heads != 0 {
                let hAt = r.offset
                // Bounded by the entry count, a property of the item rather than a limit.
                let heads64 = try r.readVarint("head count")
                guard heads64 > 0, heads64 <= UInt64(entryCount) else {
                    throw WireError(
                        .invalidValue, at: hAt,
                        heads64 == 0
                            ? "the heads flag is set but there are no heads"
                            : "\(heads64) heads but \(entryCount) entries; every head has its own entry")
                }
                let n = Int(heads64)
                var last = -1
                for _ in 0..<n {
                    let at = r.offset
                    let i = try r.readVarint("head entry index")
                    guard i < UInt64(entryCount), Int(i) > last else {
                        throw WireError(
                            .invalidValue, at: at,
                            "head entry index \(i) is outside the \(entryCount) entries or not increasing")
                    }
                    last = Int(i)
                    let sAt = r.offset
                    switch try r.readByte("head state") {
                    case 1: heads.append(Record.Head(node: entries[Int(i)].node, isDeletion: false))
                    case 2: heads.append(Record.Head(node: entries[Int(i)].node, isDeletion: true))
                    case let s: throw WireError(.invalidValue, at: sAt, "head state \(s) is not 1 (save) or 2 (delete)")
                    }
                }
            } else {
                guard entryCount == 1 else {
                    throw WireError(
                        .invalidValue, at: flagsAt,
                        "a sparse record with \(entryCount) entries must list its heads (flag bit 1)")
                }
                heads = [Record.Head(node: entries[0].node, isDeletion: false)]
            }
            let digest = try r.readFixed64("digest of the omitted parts")

            if flags & Flags.stamps == 0 && entryCount != 1 {
                throw WireError(
                    .invalidValue, at: flagsAt,
                    "a sparse record with \(entryCount) entries must stamp its fields (flag bit 2)")
            }
            let fieldsAt = r.offset
            let fieldCount = try r.readCount(
                max: r.limits.maxFieldCount, "sparse field count", limitName: "maxFieldCount")
            try r.require(fieldCount, each: 2, "\(fieldCount) sparse fields")
            var fields = [Record.Field]()
            fields.reserveCapacity(fieldCount)
            var deltas = [SparseRecord.FieldDelta]()
            var lastName = -1
            var lastWasDelta = false
            var allDefault = true
            for _ in 0..<fieldCount {
                let nameAt = r.offset
                let repeatedName = lastName
                let ni = try readIndex(
                    &r, after: &lastName, table: names.count, "field name index", allowingRepeat: true)
                usedNames[ni] = true
                let tagAt = r.offset
                let tag = try r.readByte("field type tag")
                let stamp: Dot
                if flags & Flags.stamps != 0 {
                    stamp = try r.readStamp(vv, "stamp of field \(names[ni])")
                    if entryCount != 1 || stamp != Dot(node: entries[0].node, hlc: entries[0].hlc) {
                        allDefault = false
                    }
                } else {
                    stamp = Dot(node: entries[0].node, hlc: entries[0].hlc)
                }
                let isDelta = tag == DeltaTag.patch || tag == DeltaTag.splice
                if ni == repeatedName {
                    if isDelta || lastWasDelta {
                        throw WireError(
                            .duplicate, at: nameAt,
                            "field \(names[ni]) has a delta slot and another slot; a delta slot is its field's only slot"
                        )
                    }
                    if let previous = fields.last {
                        try Record.checkConcurrentSlot(names[ni], previous: previous.stamp, stamp: stamp, at: nameAt)
                    }
                }
                lastWasDelta = isDelta
                if isDelta {
                    deltas.append(
                        try readDeltaBody(
                            &r, name: names[ni], stamp: stamp, patch: tag == DeltaTag.patch, entries: vv, base: base,
                            zone: zone))
                    continue
                }
                let value: FieldValue? =
                    tag == 0 ? nil : try FieldValue.decodePayload(tag: tag, at: tagAt, from: &r, zone: zone)
                fields.append(Record.Field(name: names[ni], value: value, stamp: stamp))
            }
            if flags & Flags.heads != 0 && entryCount == 1 && heads.count == 1 && !heads[0].isDeletion {
                throw WireError(
                    .invalidValue, at: flagsAt,
                    "the heads flag is set but the heads are the default; canonical form clears it")
            }
            if flags & Flags.stamps != 0 && allDefault && entryCount == 1 {
                throw WireError(
                    .invalidValue, at: fieldsAt,
                    "the stamps flag is set but every stamp is the default; canonical form clears it")
            }
            let extensions = flags & Flags.extensions != 0 ? try r.readExtensions("sparse record") : []
            items.append(
                SparseRecord(
                    id: id, recordType: types[Int(typeIndex)], parent: parent, entries: vv, heads: heads,
                    fields: fields, extensions: extensions, digest: digest, deltas: deltas))
        }
        if let i = usedNodes.firstIndex(of: false) {
            throw WireError(
                .invalidValue, at: nodesAt,
                "sparse node table entry \(i) (\(nodes[i])) is not used; canonical tables list only what the items use")
        }
        if let i = usedTypes.firstIndex(of: false) {
            throw WireError(
                .invalidValue, at: typesAt,
                "record type table entry \(i) (\(types[i])) is not used; canonical tables list only what the items use")
        }
        if let i = usedNames.firstIndex(of: false) {
            throw WireError(
                .invalidValue, at: namesAt,
                "field name table entry \(i) (\(names[i])) is not used; canonical tables list only what the items use")
        }
        return (base, items)
    }

    /// Reads a delta slot after its stamp: the base stamp (which `base` must cover: the receiver
    /// holds that slot), the base value's digest, and a patch or splice body (wire-format §7.4).
    static func readDeltaBody(
        _ r: inout WireReader, name: String, stamp: Dot, patch: Bool, entries: VersionVector,
        base: VersionVector, zone: RecordZone.ID
    ) throws(WireError) -> SparseRecord.FieldDelta {
        let baseAt = r.offset
        let baseStamp = try r.readStamp(entries, "base stamp of field \(name)")
        guard base.covers(baseStamp) else {
            throw WireError(
                .invalidValue, at: baseAt,
                "the delta slot of field \(name) edits a slot written at \(baseStamp), which the batch's base does not cover; the receiver need not hold it"
            )
        }
        let digest = try r.readFixed32("base digest of field \(name)")
        let edit: SparseRecord.FieldDelta.Edit
        if patch {
            edit = .patch(try RecordDelta.decodePatches(from: &r))
        } else {
            let splices = try RecordDelta.decodeSplices(from: &r, zone: zone)
            edit = .splice(kind: splices.first?.insert.elementKind ?? .string, splices)
        }
        return SparseRecord.FieldDelta(name: name, stamp: stamp, baseStamp: baseStamp, baseDigest: digest, edit: edit)
    }

    /// Reads a table index that must lie in the table and exceed `last` (or, with
    /// `allowingRepeat`, equal it: the caller checks the repeat), then becomes `last`.
    static func readIndex(
        _ r: inout WireReader, after last: inout Int, table count: Int, _ what: String,
        allowingRepeat: Bool = false
    ) throws(WireError) -> Int {
        let at = r.offset
        let i = try r.readVarint(what)
        guard i < UInt64(count) else {
            throw WireError(.invalidValue, at: at, "\(what) \(i) is outside the table of \(count)")
        }
        guard Int(i) > last || allowingRepeat && Int(i) == last else {
            throw WireError(
                Int(i) == last ? .duplicate : .unsorted, at: at,
                "\(what)es must strictly increase; \(i) follows \(last)")
        }
        last = Int(i)
        return Int(i)
    }

    static func readTable(_ r: inout WireReader, _ what: String, max limit: Int, limitName: String) throws(WireError)
        -> [String]
    {
        let n = try r.readCount(max: r.limits.maxMessageItems, "\(what) count", limitName: "maxMessageItems")
        try r.require(n, each: 2, "\(n) \(what) entries")
        var out = [String]()
        out.reserveCapacity(n)
        var previous = UnsafeRawBufferPointer(start: nil, count: 0)
        for i in 0..<n {
            let at = r.offset
            let len = try r.readLength(max: limit, "\(what) entry length", limitName: limitName)
            let raw = try r.readRaw(len, "\(what) entry")
            guard Identifier.isValid(raw) else {
                throw WireError(
                    .invalidName, at: at,
                    "\(what) entry \(String(decoding: raw, as: UTF8.self).debugDescription) must start with an ASCII letter and contain only letters, digits and _"
                )
            }
            if i > 0 {
                let c = UTF8Order.compare(previous, raw)
                if c >= 0 {
                    throw WireError(
                        c == 0 ? .duplicate : .unsorted, at: at,
                        "\(what) entries must strictly increase; \(String(decoding: raw, as: UTF8.self)) follows \(String(decoding: previous, as: UTF8.self))"
                    )
                }
            }
            previous = raw
            out.append(String(decoding: raw, as: UTF8.self))
        }
        return out
    }
}
