// SparseRecord+Deltas: sending a changed string, bytes or list field as an edit of the value the
// receiver holds, and rebuilding it there (Spec/replication.md §3.5.1, "Delta slots").

public import ShoalWire

extension SparseRecord {
    /// Values at least this large (payload bytes) are worth comparing with their base; smaller
    /// ones travel whole (a delta slot costs about ten bytes before its edits).
    public static let minimumDeltaValueBytes = 64

    /// Replaces each whole field of this sparse record that `previous` lets it send as an edit,
    /// when the edit is smaller: the field has one slot, written above `base`; `previous` (the
    /// sender's version before this one) holds one slot of that field, whose stamp `base` covers
    /// (so the receiver holds it too), of the same kind — a string, bytes, or a list of one
    /// element kind. Returns how many fields became delta slots.
    ///
    /// A string or bytes value is compared by its common prefix and suffix, then line by line in
    /// between (``BytePatcher``'s patches: one per run of changed lines); a list by its common
    /// ends, then element by element (ShoalDiff's list splices).
    @discardableResult
    public mutating func encodeEdits(against previous: Record, base: VersionVector) -> Int {
        guard previous.id == id, !fields.isEmpty else { return 0 }
        var kept = [Record.Field]()
        kept.reserveCapacity(fields.count)
        var made = [FieldDelta]()
        var i = 0
        while i < fields.count {
            var end = i &+ 1
            while end < fields.count && UTF8Order.equal(fields[end].name, fields[i].name) { end &+= 1 }
            if end == i &+ 1, let d = Self.edit(fields[i], against: previous, base: base, zone: id.zone) {
                made.append(d)
            } else {
                kept.append(contentsOf: fields[i..<end])
            }
            i = end
        }
        guard !made.isEmpty else { return 0 }
        fields = kept
        // Names are disjoint from the remaining deltas' (a field is whole or a delta, never both).
        deltas = (deltas + made).sorted { UTF8Order.compare($0.name, $1.name) < 0 }
        return made.count
    }

    /// The delta slot for `slot`, when `previous` holds a base for it and the edit is smaller.
    static func edit(_ slot: Record.Field, against previous: Record, base: VersionVector, zone: RecordZone.ID)
        -> FieldDelta?
    {
        guard let value = slot.value, let stamp = slot.stamp, !base.covers(stamp),
            value.payloadSize(zone: zone) >= minimumDeltaValueBytes
        else { return nil }
        let old = previous.slots(for: slot.name)
        guard old.count == 1, let was = old.first, let baseValue = was.value, let baseStamp = was.stamp,
            base.covers(baseStamp), baseStamp != stamp
        else { return nil }
        let edit: FieldDelta.Edit
        switch (baseValue, value) {
        case let (.string(a), .string(b)):
            let p = BytePatcher.patches(from: a, to: b)
            guard !p.isEmpty else { return nil }
            edit = .patch(p)
        case let (.bytes(a), .bytes(b)):
            let p = BytePatcher.patches(from: a, to: b)
            guard !p.isEmpty else { return nil }
            edit = .patch(p)
        case let (.list(a), .list(b)):
            guard a.elementKind == b.elementKind, let s = ListSplicer.splices(from: a, to: b), !s.isEmpty else {
                return nil
            }
            edit = .splice(kind: a.elementKind, s)
        default:
            return nil
        }
        let delta = FieldDelta(
            name: slot.name, stamp: stamp, baseStamp: baseStamp,
            baseDigest: FieldDelta.digest(of: baseValue, zone: zone), edit: edit)
        // Whole: the value's payload. As an edit: the base stamp (at most 20 bytes), the digest and
        // the edits. The stamp itself and the tag cost the same either way.
        let editBytes: Int
        switch edit {
        case .patch(let p): editBytes = p.reduce(0) { $0 &+ BytePatcher.encodedSize($1) }
        case .splice(_, let s): editBytes = ListSplicer.encodedSize(s, zone: zone)
        }
        return 20 &+ 4 &+ editBytes < value.payloadSize(zone: zone) ? delta : nil
    }
}

extension SparseRecord.FieldDelta {
    /// The slot this delta makes from `bases`, the receiver's versions that may hold its base
    /// (the stored version, the one before it): the first slot of this field stamped
    /// ``baseStamp`` whose value matches ``baseDigest``, with the edit applied. Nil when no
    /// version holds that value or the edit does not fit it.
    public func slot(on bases: [Record], zone: RecordZone.ID) -> Record.Field? {
        for b in bases {
            for s in b.slots(for: name) where s.stamp == baseStamp {
                guard let v = s.value, Self.digest(of: v, zone: zone) == baseDigest else { continue }
                do throws(DiffError) {
                    let new: FieldValue
                    switch (edit, v) {
                    case (.patch(let edits), .string), (.patch(let edits), .bytes):
                        new = try BytePatcher.apply(edits, to: v, field: name)
                    case (.splice(let kind, let edits), .list(let list)):
                        guard list.elementKind == kind else { continue }
                        new = .list(try ListSplicer.apply(edits, to: list, field: name))
                    default:
                        continue
                    }
                    return Record.Field(name: name, value: new, stamp: stamp)
                } catch {
                    continue
                }
            }
        }
        return nil
    }
}
