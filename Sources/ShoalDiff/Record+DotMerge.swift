// Record+DotMerge: merging two versions without their ancestor, driven by field dots and vectors.

public import ShoalWire

/// Merges two versions of one record without their common ancestor, field by field, from the
/// fields' stamps and the two version vectors. `merge(a, b)` and `merge(b, a)` give the same
/// record, byte for byte, every node computes it the same way, and any order of merges of the
/// same versions gives the same record (Spec/diff-and-merge.md §5).
///
/// A slot survives when both sides hold it, or when the other side's vector does not cover its
/// stamp (the other side has not seen that write, so has not superseded it). So a field can keep
/// several *concurrent slots* — writes neither side had seen the other supersede — side by side,
/// the later stamp first; the first is the field's value (``ShoalWire/Record/slots(for:)``), the
/// later writer's, as ``LastWriterWins`` orders them. A field whose every slot the other side has
/// seen superseded (or removed, by a deletion or a record created again over a purge) is gone.
///
/// Removed-field markers take part like values. An unsaved slot (no stamp) is never superseded
/// and outranks every stamped slot of its field, which it replaces. System fields merge as in
/// ``merge(ancestor:local:remote:policy:)``: vector union, surviving heads, the later creation dot
/// (a join: see `SystemFieldsMerge.creation`), extensions united; record type and parent from the
/// causally later side, else from the side with the newest write, else the larger value.
///
/// This is the merge replication uses: a peer may not hold the common ancestor.
///
/// - Throws: ``DiffError`` `.recordMismatch` when the records have different IDs.
public func merge(_ a: Record, _ b: Record) throws(DiffError) -> Record {
    guard a.id == b.id else {
        throw DiffError(
            .recordMismatch,
            "a merge needs two versions of one record, but got \(a.id) and \(b.id); merge versions of the same record")
    }
    let fields = a.fields.withUnsafeBufferPointer { pa in
        b.fields.withUnsafeBufferPointer { pb in
            DotMerge.fields(pa, pb, a.versionVector, b.versionVector, zone: a.id.zone)
        }
    }
    let side = SystemFieldsMerge.side(a, b)
    return Record(
        recordType: SystemFieldsMerge.recordType(a, b, side: side), id: a.id,
        parent: SystemFieldsMerge.parent(a, b, side: side),
        creation: SystemFieldsMerge.creation(a.creation, b.creation),
        versionVector: a.versionVector.union(b.versionVector),
        heads: SystemFieldsMerge.heads(a, b), fields: fields,
        extensions: SystemFieldsMerge.extensions(a.extensions, b.extensions))
}

/// The field walk of ``merge(_:_:)``: one pass over both slot arrays, read in place, in their
/// order — by name, then the later stamp first (an unsaved slot before every stamped one).
enum DotMerge {
    static func fields(
        _ pa: UnsafeBufferPointer<Record.Field>, _ pb: UnsafeBufferPointer<Record.Field>,
        _ va: VersionVector, _ vb: VersionVector, zone: RecordZone.ID
    ) -> [Record.Field] {
        var out = [Record.Field]()
        // Room for a couple of concurrent slots: a conflict keeps both.
        out.reserveCapacity(max(pa.count, pb.count) &+ 2)
        var i = 0, j = 0
        let n = pa.count, m = pb.count
        if let a = pa.baseAddress, let b = pb.baseAddress {
            let layout = SlotLayout.field
            while i < n && j < m {
                let x = a + i, y = b + j
                if SlotEquality.identical(x, y, layout) {
                    append(x.pointee, to: &out)
                    i &+= 1
                    j &+= 1
                    continue
                }
                var c = SlotEquality.order(x, y, layout)
                if c == 0 { c = stampOrder(x.pointee.stamp, y.pointee.stamp) }
                if c == 0 {
                    // One write (or two unsaved edits): the same slot, or — never in a correct
                    // history — two values under one stamp, of which the higher-ranked stays.
                    append(
                        SlotEquality.sameContent(x, y)
                            ? x.pointee : LastWriterWins.winner(x.pointee, y.pointee, zone: zone), to: &out)
                    i &+= 1
                    j &+= 1
                } else if c < 0 {
                    if !superseded(x.pointee, by: vb) { append(x.pointee, to: &out) }
                    i &+= 1
                } else {
                    if !superseded(y.pointee, by: va) { append(y.pointee, to: &out) }
                    j &+= 1
                }
            }
        }
        while i < n {
            if !superseded(pa[i], by: vb) { append(pa[i], to: &out) }
            i &+= 1
        }
        while j < m {
            if !superseded(pb[j], by: va) { append(pb[j], to: &out) }
            j &+= 1
        }
        return out
    }

    /// Appends a surviving slot, unless an unsaved slot of its field precedes it (an unsaved edit
    /// replaces the field's slots).
    @inline(__always)
    static func append(_ slot: Record.Field, to out: inout [Record.Field]) {
        if let last = out.last, last.stamp == nil, NameOrder.equal(last.name, slot.name) { return }
        out.append(slot)
    }

    /// The order of two slots of one name: −1 when `x` comes first (the later stamp, or unsaved).
    @inline(__always)
    static func stampOrder(_ x: Dot?, _ y: Dot?) -> Int {
        switch (x, y) {
        case let (p?, q?): return p == q ? 0 : (q < p ? -1 : 1)
        case (nil, _?): return -1
        case (_?, nil): return 1
        case (nil, nil): return 0
        }
    }

    /// Whether the other side, with vector `other`, has seen the write that set `slot`.
    @inline(__always)
    static func superseded(_ slot: Record.Field, by other: VersionVector) -> Bool {
        guard let s = slot.stamp else { return false }
        return other.covers(s)
    }
}
