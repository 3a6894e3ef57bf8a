// Record+DotMerge: merging two versions without their ancestor, driven by field dots and vectors.

public import ShoalWire

/// Merges two versions of one record without their common ancestor, field by field, from the
/// fields' stamps and the two version vectors. `merge(a, b)` and `merge(b, a)` give the same
/// record, byte for byte, and every node computes it the same way.
///
/// For each field name:
/// - equal slots stay;
/// - a slot whose stamp the other side's vector covers, where the other side differs, has been
///   superseded there: the other side's slot (or its absence) wins;
/// - when neither side has seen the other's write (or both claim to have), the edits are
///   concurrent and the later slot by ``LastWriterWins`` order wins — HLC, then node ID.
///
/// Removed-field markers take part like values, so a removal beats an older value and loses to a
/// newer one. System fields merge as in ``merge(ancestor:local:remote:policy:)``: vector union,
/// surviving heads, the later creation dot (a join: see `SystemFieldsMerge.creation`), extensions
/// united; record type and parent from the
/// causally later side, else from the side with the newest write, else the larger value.
///
/// This is the merge replication uses: a peer may not hold the common ancestor.
///
/// - Throws: ``DiffError`` `.recordMismatch` when the records have different IDs.
public func merge(_ a: Record, _ b: Record) throws(DiffError) -> Record {
    guard a.id == b.id else {
        throw DiffError(.recordMismatch, "a merge needs two versions of one record, but got \(a.id) and \(b.id); merge versions of the same record")
    }
    let fields = a.fields.withUnsafeBufferPointer { pa in
        b.fields.withUnsafeBufferPointer { pb in DotMerge.fields(pa, pb, a.versionVector, b.versionVector, zone: a.id.zone) }
    }
    let side = SystemFieldsMerge.side(a, b)
    return Record(recordType: SystemFieldsMerge.recordType(a, b, side: side), id: a.id,
                  parent: SystemFieldsMerge.parent(a, b, side: side),
                  creation: SystemFieldsMerge.creation(a.creation, b.creation),
                  versionVector: a.versionVector.union(b.versionVector),
                  heads: SystemFieldsMerge.heads(a, b), fields: fields,
                  extensions: SystemFieldsMerge.extensions(a.extensions, b.extensions))
}

/// The field walk of ``merge(_:_:)``: one pass over both sorted slot arrays, read in place.
enum DotMerge {
    static func fields(_ pa: UnsafeBufferPointer<Record.Field>, _ pb: UnsafeBufferPointer<Record.Field>,
                       _ va: VersionVector, _ vb: VersionVector, zone: RecordZone.ID) -> [Record.Field] {
        var out = [Record.Field]()
        out.reserveCapacity(max(pa.count, pb.count))
        var i = 0, j = 0
        let n = pa.count, m = pb.count
        if let a = pa.baseAddress, let b = pb.baseAddress {
            let layout = SlotLayout.field
            while i < n && j < m {
                let x = a + i, y = b + j
                if SlotEquality.identical(x, y, layout) {
                    out.append(x.pointee)
                    i &+= 1
                    j &+= 1
                    continue
                }
                let c = SlotEquality.order(x, y, layout)
                if c == 0 {
                    out.append(SlotEquality.sameContent(x, y) ? x.pointee : winner(x.pointee, y.pointee, va, vb, zone: zone))
                    i &+= 1
                    j &+= 1
                } else if c < 0 {
                    if !superseded(x.pointee, by: vb) { out.append(x.pointee) }
                    i &+= 1
                } else {
                    if !superseded(y.pointee, by: va) { out.append(y.pointee) }
                    j &+= 1
                }
            }
        }
        while i < n {
            if !superseded(pa[i], by: vb) { out.append(pa[i]) }
            i &+= 1
        }
        while j < m {
            if !superseded(pb[j], by: va) { out.append(pb[j]) }
            j &+= 1
        }
        return out
    }

    /// Whether the other side, with vector `other`, has seen the write that set `slot`.
    @inline(__always)
    static func superseded(_ slot: Record.Field, by other: VersionVector) -> Bool {
        guard let s = slot.stamp else { return false }
        return other.covers(s)
    }

    /// The surviving one of two different slots of one field.
    static func winner(_ x: Record.Field, _ y: Record.Field, _ va: VersionVector, _ vb: VersionVector,
                       zone: RecordZone.ID) -> Record.Field {
        let xSuperseded = superseded(x, by: vb), ySuperseded = superseded(y, by: va)
        if xSuperseded != ySuperseded { return xSuperseded ? y : x }
        return LastWriterWins.winner(x, y, zone: zone)
    }
}
