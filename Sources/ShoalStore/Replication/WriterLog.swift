// WriterLog: the hashes of authenticated writes — slot digests, a write's entry, and the chain a writer's device signs.

internal import Crypto
package import ShoalWire

/// The hashing behind authenticated writes (Spec/authenticated-writes.md §2): the digest of a
/// field slot, the entry of a write as its writer's log records it, and the hash chain over a
/// log's entries.
package enum WriterLog {
    /// The digest of the slot named `name` holding `value` (nil: the field was removed) in a
    /// record of `zone`: the first 16 bytes of SHA-256 over ``WriteEntry/slotDigestContext``,
    /// the name as a `name`, then a presence byte and the canonical value.
    package static func slotDigest(name: String, value: FieldValue?, zone: RecordZone.ID) -> [UInt8] {
        var size = WireSize.string(name) &+ 1
        if let value { size &+= 1 &+ value.payloadSize(zone: zone) }
        let bytes = WireWriter.encode(size: size) { w in
            w.writeString(name)
            if let value {
                w.writeByte(1)
                w.writeByte(value.tag)
                value.encodePayload(into: &w, zone: zone)
            } else {
                w.writeByte(0)
            }
        }
        return digest(bytes)
    }

    /// The digest of the slot with the empty name, which stands for the record's type and parent:
    /// as ``slotDigest(name:value:zone:)`` with presence 1, then the record type as an
    /// `identifier` and the parent as a presence byte and a reference.
    package static func systemDigest(recordType: String, parent: Reference?, zone: RecordZone.ID) -> [UInt8] {
        var size = WireSize.string("") &+ 1 &+ WireSize.string(recordType) &+ 1
        if let parent { size &+= parent.payloadSize(zone: zone) }
        let bytes = WireWriter.encode(size: size) { w in
            w.writeString("")
            w.writeByte(1)
            w.writeString(recordType)
            if let parent {
                w.writeByte(1)
                parent.encodePayload(into: &w, zone: zone)
            } else {
                w.writeByte(0)
            }
        }
        return digest(bytes)
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
        var h = SHA256()
        h.update(data: WriteEntry.chainContext)
        h.update(data: bytes)
        return Array(h.finalize())
    }

    /// The chain value after `entry`, given the value before it: SHA-256 over both.
    package static func chain(_ previous: [UInt8], _ entry: WriteEntry) -> [UInt8] {
        chain(previous, entry.encoded())
    }

    /// The chain value after the entry whose canonical bytes are `entryBytes`.
    package static func chain(_ previous: [UInt8], _ entryBytes: [UInt8]) -> [UInt8] {
        var h = SHA256()
        h.update(data: previous)
        h.update(data: entryBytes)
        return Array(h.finalize())
    }

    /// The chain value after `entries`, which follow `start` without a gap; nil when they do
    /// not (a sequence missing, repeated or out of order), or when their timestamps do not
    /// strictly increase.
    package static func chain(from start: [UInt8], after previous: (sequence: UInt64, hlc: HLC), _ entries: [WriteEntry]) -> [UInt8]? {
        var value = start
        var last = previous
        for e in entries {
            guard last.sequence < UInt64.max, e.sequence == last.sequence &+ 1, e.hlc > last.hlc || last.sequence == 0 else { return nil }
            value = chain(value, e)
            last = (e.sequence, e.hlc)
        }
        return value
    }

    static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var h = SHA256()
        h.update(data: WriteEntry.slotDigestContext)
        h.update(data: bytes)
        return Array(h.finalize().prefix(WriteEntry.digestBytes))
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
        var index = [String: Int]()
        for (i, v) in versions.enumerated() { index[v.id.name] = i }
        return entries.map { e in
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
    /// the mismatch, or nil.
    package static func check(_ version: Record, writer: NodeID, entry at: (HLC) -> WriteEntry?) -> Mismatch? {
        let zone = version.id.zone
        var entries = [HLC: WriteEntry]()
        func find(_ hlc: HLC) -> WriteEntry? {
            if let e = entries[hlc] { return e }
            guard let e = at(hlc), e.record == version.id.name else { return nil }
            entries[hlc] = e
            return e
        }
        for f in version.fields {
            guard let stamp = f.stamp, stamp.node == writer else { continue }
            guard let e = find(stamp.hlc) else {
                return Mismatch(description: "\(version.id) holds \(f.name.debugDescription) stamped \(stamp), a write no entry of \(writer) holds")
            }
            let digest = slotDigest(name: f.name, value: f.value, zone: zone)
            guard e.slots.contains(WriteEntry.Slot(name: f.name, digest: digest)) else {
                return Mismatch(description: "\(version.id) holds \(f.name.debugDescription) stamped \(stamp) with a value its writer did not write")
            }
        }
        if let head = version.heads.first(where: { $0.node == writer }) {
            let hlc = version.versionVector[writer]
            guard let e = find(hlc) else {
                return Mismatch(description: "\(version.id) has \(writer) at \(hlc) as a head, a write no entry of it holds")
            }
            guard e.isDeletion == head.isDeletion else {
                return Mismatch(description: "\(version.id) says \(writer)'s write at \(hlc) \(head.isDeletion ? "deleted" : "saved") it; its entry says otherwise")
            }
        }
        if let creation = version.creation, creation.node == writer {
            guard let e = find(creation.hlc), e.isCreation else {
                return Mismatch(description: "\(version.id) names \(creation) as its creation, which no entry of \(writer) says")
            }
        }
        return nil
    }
}
