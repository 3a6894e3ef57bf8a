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

    /// The entry of the write `dot` that produced `version`, `sequence` in its writer's log: the
    /// slots `version` stamps with `dot`, and for a save its type and parent. Call with the
    /// version the write itself produced, before any merge: a merge may leave out slots the
    /// write set.
    package static func entry(of version: Record, dot: Dot, sequence: UInt64) -> WriteEntry {
        let zone = version.id.zone
        let deletion = version.heads.contains { $0.node == dot.node && $0.isDeletion }
        var slots = [WriteEntry.Slot]()
        if !deletion {
            slots.append(WriteEntry.Slot(name: "", digest: systemDigest(recordType: version.recordType, parent: version.parent, zone: zone)))
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
