// WriterLog: the hashes of authenticated writes — slot digests, a write's entry, and the chain a writer's device signs.

internal import Crypto
package import ShoalWire

/// The hashing behind authenticated writes (Spec/authenticated-writes.md §2): the digest of a
/// field slot, the entry of a write as its writer's log records it, and the hash chain over a
/// log's entries.
package enum WriterLog {
    /// The digest of the slot named `name` holding `value` (nil: the field was removed) in a
    /// record of `zone` (Spec/authenticated-writes.md §2): the slot's value bytes — a presence
    /// byte, then the canonical value — themselves when they are at most
    /// ``WriteEntry/inlineSlotBytes`` long, otherwise the first ``WriteEntry/digestBytes`` bytes
    /// of SHA-256 over ``WriteEntry/slotDigestContext``, the name as a `name`, and those bytes.
    package static func slotDigest(name: String, value: FieldValue?, zone: RecordZone.ID) -> [UInt8] {
        var size = 1
        if let value { size &+= 1 &+ value.payloadSize(zone: zone) }
        return digest(name: name, valueSize: size) { w in
            if let value {
                w.writeByte(1)
                w.writeByte(value.tag)
                value.encodePayload(into: &w, zone: zone)
            } else {
                w.writeByte(0)
            }
        }
    }

    /// The digest of the slot with the empty name, which stands for the record's type and parent:
    /// as ``slotDigest(name:value:zone:)`` with the value bytes presence 1, the record type as an
    /// `identifier`, then a presence byte and, when 1, the parent as a reference.
    package static func systemDigest(recordType: String, parent: Reference?, zone: RecordZone.ID) -> [UInt8] {
        var size = 1 &+ WireSize.string(recordType) &+ 1
        if let parent { size &+= parent.payloadSize(zone: zone) }
        return digest(name: "", valueSize: size) { w in
            w.writeByte(1)
            w.writeString(recordType)
            if let parent {
                w.writeByte(1)
                parent.encodePayload(into: &w, zone: zone)
            } else {
                w.writeByte(0)
            }
        }
    }

    /// The entry of the write `dot` as `version` shows it, `sequence` in its writer's log: the
    /// slots `version` stamps with `dot`; when `dot` is a head of `version` (its writer's vector
    /// entry, and a head), also whether it deleted the record and, for a save, the type and
    /// parent (the slot with the empty name). For the version the write itself produced this is
    /// the write's entry; a later version may show less of it (replaced slots), or another
    /// head's type and parent, and a sender then sends what it lacks (Spec/authenticated-writes.md §4).
    package static func entry(of version: Record, dot: Dot, sequence: UInt64) -> WriteEntry {
        let zone = version.id.zone
        let head = version.versionVector[dot.node] == dot.hlc ? version.heads.first { $0.node == dot.node } : nil
        let deletion = head?.isDeletion == true
        var slots = [WriteEntry.Slot]()
        if !deletion {
            slots.reserveCapacity(version.fields.count &+ 1)
            if head != nil {
                slots.append(WriteEntry.Slot(name: "", digest: systemDigest(recordType: version.recordType, parent: version.parent, zone: zone)))
            }
            for f in version.fields where f.stamp == dot {
                slots.append(WriteEntry.Slot(name: f.name, digest: slotDigest(name: f.name, value: f.value, zone: zone)))
            }
        }
        return WriteEntry(sequence: sequence, hlc: dot.hlc, isDeletion: deletion, isCreation: version.creation == dot,
                          record: version.id.name, slots: slots)
    }

    /// The chain value before a log's first entry: SHA-256 over ``WriteEntry/chainContext``, the
    /// zone ID and the writer. The incarnation is not in it: a zone that adopts another
    /// incarnation keeps its records and their logs, and the checkpoints, which name the
    /// incarnation, are signed again.
    package static func chainStart(zone: RecordZone.ID, writer: NodeID) -> [UInt8] {
        let bytes = WireWriter.encode(size: WireSize.zoneID(zone) &+ 16) { w in
            w.writeZoneID(zone)
            w.writeNodeID(writer)
        }
        return sha256(WriteEntry.chainContext, bytes)
    }

    /// The chain value after `entry`, given the value before it: SHA-256 over both.
    package static func chain(_ previous: [UInt8], _ entry: WriteEntry) -> [UInt8] {
        chain(previous, entry.encoded())
    }

    /// The chain value after the entry whose canonical bytes are `entryBytes`.
    package static func chain(_ previous: [UInt8], _ entryBytes: [UInt8]) -> [UInt8] {
        sha256(previous, entryBytes)
    }

    /// The chain value after `entries`, which follow `start` without a gap; nil when they do
    /// not (a sequence missing, repeated or out of order), or when their timestamps do not
    /// strictly increase.
    package static func chain(from start: [UInt8], after previous: (sequence: UInt64, hlc: HLC), _ entries: [WriteEntry]) -> [UInt8]? {
        guard let links = links(from: start, after: previous, entries) else { return nil }
        return links.last?.chain ?? start
    }

    /// Each of `entries` as its canonical bytes with the chain value after it, hashed on from
    /// `start`; nil under the conditions of ``chain(from:after:_:)``.
    package static func links(from start: [UInt8], after previous: (sequence: UInt64, hlc: HLC),
                              _ entries: [WriteEntry]) -> [(bytes: [UInt8], chain: [UInt8])]? {
        var out = [(bytes: [UInt8], chain: [UInt8])]()
        out.reserveCapacity(entries.count)
        var value = start
        var last = previous
        for e in entries {
            guard last.sequence < UInt64.max, e.sequence == last.sequence &+ 1, e.hlc > last.hlc || last.sequence == 0 else { return nil }
            let bytes = e.encoded()
            value = chain(value, bytes)
            out.append((bytes, value))
            last = (e.sequence, e.hlc)
        }
        return out
    }

    /// The digest of slot `name` whose value bytes (`valueSize` of them) `body` writes: the bytes
    /// when they are short, otherwise the first ``WriteEntry/digestBytes`` bytes of SHA-256 over
    /// ``WriteEntry/slotDigestContext``, the name and the bytes, hashed from scratch space.
    static func digest(name: String, valueSize: Int, _ body: (inout WireWriter) -> Void) -> [UInt8] {
        if valueSize <= WriteEntry.inlineSlotBytes { return WireWriter.encode(size: valueSize, body) }
        let size = WireSize.string(name) &+ valueSize
        return withUnsafeTemporaryAllocation(byteCount: size, alignment: 8) { scratch in
            // A hashed value is at least 16 bytes, so there is always a base address.
            guard let base = scratch.baseAddress else { preconditionFailure("a temporary allocation of \(size) bytes has no address") }
            var w = WireWriter(start: base, count: size)
            w.writeString(name)
            body(&w)
            precondition(w.remaining == 0, "ShoalWire size pass and write pass disagree")
            var h = SHA256()
            WriteEntry.slotDigestContext.withUnsafeBytes { h.update(bufferPointer: $0) }
            h.update(bufferPointer: UnsafeRawBufferPointer(start: base, count: size))
            return h.finalize().withUnsafeBytes { Array(UnsafeRawBufferPointer(rebasing: $0.prefix(WriteEntry.digestBytes))) }
        }
    }

    /// SHA-256 over `first` then `second`, as 32 bytes. (Reading a digest through its buffer:
    /// its element-wise sequence costs more than the hashing.)
    static func sha256(_ first: [UInt8], _ second: [UInt8]) -> [UInt8] {
        var h = SHA256()
        first.withUnsafeBytes { h.update(bufferPointer: $0) }
        second.withUnsafeBytes { h.update(bufferPointer: $0) }
        return h.finalize().withUnsafeBytes { Array($0) }
    }
}

extension WriterLog {
    /// How a range's entries and a batch's versions failed to match (Spec/authenticated-writes.md §4–§5).
    package struct Mismatch: Error, Hashable, Sendable, CustomStringConvertible {
        /// What failed, naming the writer, the entry or the record.
        package var description: String
    }

    /// The form each of `entries` (consecutive entries of `writer`'s log) travels in beside the
    /// batch's `versions`: implied by a version that shows the write whole, partial when the
    /// version shows only some of its slots, whole when no version of the batch shows it.
    package static func items(for entries: [WriteEntry], of writer: NodeID, versions: [Record]) -> [WriterLogSection.Item] {
        let made = madeBy(writer, versions: versions)
        let index = names(versions)
        return entries.map { e in item(for: e, hlc: e.hlc, of: writer, versions: versions, made: made, index: index) ?? .whole(e) }
    }

    /// The timestamps of `writer`'s writes that `versions` show whole because each is the
    /// version the write made, by version index: its vector names the writer alone, at the
    /// write (every later write moves the vector). A write is of one record, so its entry is
    /// implied by that version without being read.
    package static func madeBy(_ writer: NodeID, versions: [Record]) -> [HLC: Int] {
        madeBy(writer, vectors: versions.map(\.versionVector))
    }

    /// As ``madeBy(_:versions:)`` from the versions' vectors alone.
    package static func madeBy(_ writer: NodeID, vectors: [VersionVector]) -> [HLC: Int] {
        var out = [HLC: Int]()
        for (i, v) in vectors.enumerated() where v.entries.count == 1 {
            let hlc = v[writer]
            if hlc != .zero { out[hlc] = i }
        }
        return out
    }

    /// As ``items(for:of:versions:)`` for entries given with their timestamps, read only where
    /// `made` (``madeBy(_:versions:)``) names no version; nil when one of the others is unread.
    package static func items(for entries: [(hlc: HLC, entry: WriteEntry?)], of writer: NodeID, versions: [Record],
                              made: [HLC: Int]) -> [WriterLogSection.Item]? {
        let index = names(versions)
        var out = [WriterLogSection.Item]()
        out.reserveCapacity(entries.count)
        for (hlc, read) in entries {
            guard let item = item(for: read, hlc: hlc, of: writer, versions: versions, made: made, index: index) else { return nil }
            out.append(item)
        }
        return out
    }

    static func names(_ versions: [Record]) -> [String: Int] {
        var index = [String: Int]()
        for (i, v) in versions.enumerated() { index[v.id.name] = i }
        return index
    }

    /// The form of the entry at `hlc` (`read`, nil when unread): nil only for an unread entry
    /// `made` does not name.
    static func item(for read: WriteEntry?, hlc: HLC, of writer: NodeID, versions: [Record], made: [HLC: Int],
                     index: [String: Int]) -> WriterLogSection.Item? {
        if let i = made[hlc] { return .implied(record: i) }
        guard let e = read else { return nil }
        guard let i = index[e.record] else { return .whole(e) }
        let v = versions[i]
        let shown = entry(of: v, dot: Dot(node: writer, hlc: e.hlc), sequence: e.sequence)
        if shown == e { return v.versionVector[writer] == e.hlc ? .implied(record: i) : .impliedAt(record: i, hlc: e.hlc) }
        // The version may show less of the write (replaced slots), never more or other.
        let held = Set(shown.slots)
        guard shown.isDeletion == e.isDeletion, shown.isCreation == e.isCreation, held.isSubset(of: Set(e.slots)) else { return .whole(e) }
        let missing = e.slots.filter { !held.contains($0) }
        return .partial(record: i, hlc: e.hlc, missing: missing)
    }

    /// The entries of `range` rebuilt against the batch's `versions` (whole, then sparse as
    /// rebuilt, in the batch's order), or the mismatch: an implied entry whose version has no
    /// write of the writer there, or a partial one whose missing slots the version shows.
    package static func entries(of range: WriterLogSection.Range, versions: [Record]) -> Result<[WriteEntry], Mismatch> {
        entries(of: range, versions: versions.map(Optional.some))
    }

    /// As ``entries(of:versions:)`` where some versions could not be rebuilt (nil): an entry
    /// implied by one of those is a mismatch.
    package static func entries(of range: WriterLogSection.Range, versions: [Record?]) -> Result<[WriteEntry], Mismatch> {
        var out = [WriteEntry]()
        out.reserveCapacity(range.items.count)
        for (offset, item) in range.items.enumerated() {
            let sequence = range.firstSequence &+ UInt64(offset)
            switch item {
            case .whole(let e):
                out.append(e)
            case .implied(let i), .impliedAt(let i, _), .partial(let i, _, _):
                guard i < versions.count else { return .failure(Mismatch(description: "entry #\(sequence) of \(range.writer) names version \(i) of a batch of \(versions.count)")) }
                guard let v = versions[i] else {
                    return .failure(Mismatch(description: "entry #\(sequence) of \(range.writer) is implied by version \(i), which could not be rebuilt here"))
                }
                let hlc: HLC
                switch item {
                case .impliedAt(_, let h), .partial(_, let h, _): hlc = h
                default: hlc = v.versionVector[range.writer]
                }
                guard hlc != .zero else {
                    return .failure(Mismatch(description: "entry #\(sequence) of \(range.writer) is implied by \(v.id), which shows no write of it"))
                }
                var e = entry(of: v, dot: Dot(node: range.writer, hlc: hlc), sequence: sequence)
                if case .partial(_, _, let missing) = item {
                    let shown = Set(e.slots.map(\.name))
                    if let twice = missing.first(where: { shown.contains($0.name) }) {
                        return .failure(Mismatch(description: "entry #\(sequence) of \(range.writer) lists slot \(twice.name.debugDescription) as missing from \(v.id), which shows it"))
                    }
                    e = WriteEntry(sequence: sequence, hlc: hlc, isDeletion: e.isDeletion, isCreation: e.isCreation, record: e.record,
                                   slots: e.slots + missing)
                }
                out.append(e)
            }
        }
        return .success(out)
    }

    /// Whether `version` shows only writes of `writer` that `entry(at:)` holds: each slot stamped
    /// by the writer is among its write's entry's slots, with the same digest; a head of the
    /// writer has an entry for the version's record that says whether it deleted it, and a
    /// creation by the writer is an entry's creation (Spec/authenticated-writes.md §5 rule 1;
    /// the type and parent are checked against the heads' entries together, not here). Returns
    /// the mismatch, or nil. `rebuilt`: the dots of entries rebuilt from this very version
    /// (implied by it in a batch), which show it as it is by construction.
    package static func check(_ version: Record, writer: NodeID, rebuilt: [Dot] = [], entry at: (HLC) -> WriteEntry?) -> Mismatch? {
        let zone = version.id.zone
        var entries = [HLC: WriteEntry]()
        func find(_ hlc: HLC) -> WriteEntry? {
            if let e = entries[hlc] { return e }
            guard let e = at(hlc), e.record == version.id.name else { return nil }
            entries[hlc] = e
            return e
        }
        for f in version.fields {
            // An entry rebuilt from this version holds this slot's digest by construction.
            guard let stamp = f.stamp, stamp.node == writer, !rebuilt.contains(stamp) else { continue }
            guard let e = find(stamp.hlc) else {
                return Mismatch(description: "\(version.id) holds \(f.name.debugDescription) stamped \(stamp), a write no entry of \(writer) holds")
            }
            let digest = slotDigest(name: f.name, value: f.value, zone: zone)
            guard e.slots.contains(WriteEntry.Slot(name: f.name, digest: digest)) else {
                return Mismatch(description: "\(version.id) holds \(f.name.debugDescription) stamped \(stamp) with a value its writer did not write")
            }
        }
        // An entry rebuilt from this version says what it says of its heads and creation.
        if let head = version.heads.first(where: { $0.node == writer }),
           !rebuilt.contains(Dot(node: writer, hlc: version.versionVector[writer])) {
            let hlc = version.versionVector[writer]
            guard let e = find(hlc) else {
                return Mismatch(description: "\(version.id) has \(writer) at \(hlc) as a head, a write no entry of it holds")
            }
            guard e.isDeletion == head.isDeletion else {
                return Mismatch(description: "\(version.id) says \(writer)'s write at \(hlc) \(head.isDeletion ? "deleted" : "saved") it; its entry says otherwise")
            }
        }
        if let creation = version.creation, creation.node == writer, !rebuilt.contains(creation) {
            guard let e = find(creation.hlc), e.isCreation else {
                return Mismatch(description: "\(version.id) names \(creation) as its creation, which no entry of \(writer) says")
            }
        }
        return nil
    }
}
