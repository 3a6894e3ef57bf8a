// Record+ThreeWayMerge: merging two versions against their common ancestor, field by field.

public import ShoalWire

/// Merges `local` and `remote`, two versions descended from `ancestor`, field by field.
///
/// A field changed on one side only (its slot — value or stamp — differs from the ancestor's)
/// takes that side's slot. A field changed on both sides to the same value takes the later slot
/// by ``LastWriterWins`` order. A field changed on both sides to different values is a conflict,
/// resolved by `policy`: by default the later stamp wins (the same on every node); with
/// ``MergePolicy/resolve(_:)`` the caller decides, given the three records. Removed-field markers
/// and removed slots take part like values; a field with concurrent slots (after a merge of
/// concurrent versions) takes part by its first slot, its value, and the result holds one slot.
///
/// System fields: the version vector is the union; a side's head survives unless the other side
/// has seen that write and moved past it; the creation is the later of the two dots (a join, see `SystemFieldsMerge.creation`); extensions are united.
/// The record type and parent merge three-way like fields; if both sides changed them
/// differently, the causally later side wins, else the side with the newest write.
///
/// Use this where the common ancestor is at hand — the store's save-policy conflicts, like
/// CloudKit's `serverRecordChanged`. Replication, where a peer may not hold the ancestor, uses
/// ``merge(_:_:)``.
///
/// - Throws: ``DiffError`` `.recordMismatch` when the three records do not share one ID.
public func merge(
    ancestor: Record, local: Record, remote: Record,
    policy: MergePolicy = .lastWriterWins
) throws(DiffError) -> Record {
    // A field with concurrent slots takes part by its value, the first of them.
    let ancestor = ancestor.withoutConcurrentSlots, local = local.withoutConcurrentSlots,
        remote = remote.withoutConcurrentSlots
    guard ancestor.id == local.id, local.id == remote.id else {
        throw DiffError(
            .recordMismatch,
            "a merge needs three versions of one record, but got \(ancestor.id), \(local.id) and \(remote.id); merge versions of the same record"
        )
    }
    let fields = ancestor.fields.withUnsafeBufferPointer { pa in
        local.fields.withUnsafeBufferPointer { pl in
            remote.fields.withUnsafeBufferPointer { pr in
                ThreeWayMerge(ancestor: ancestor, local: local, remote: remote, policy: policy).fields(pa, pl, pr)
            }
        }
    }
    let side = SystemFieldsMerge.side(local, remote)
    let recordType =
        local.recordType == ancestor.recordType
        ? remote.recordType
        : remote.recordType == ancestor.recordType
            ? local.recordType
            : SystemFieldsMerge.recordType(local, remote, side: side)
    let parent =
        local.parent == ancestor.parent
        ? remote.parent
        : remote.parent == ancestor.parent
            ? local.parent
            : SystemFieldsMerge.parent(local, remote, side: side)
    return Record(
        recordType: recordType, id: local.id, parent: parent,
        creation: SystemFieldsMerge.creation(local.creation, remote.creation),
        versionVector: local.versionVector.union(remote.versionVector),
        heads: SystemFieldsMerge.heads(local, remote), fields: fields,
        extensions: SystemFieldsMerge.extensions(local.extensions, remote.extensions))
}

/// The field walk of ``merge(ancestor:local:remote:policy:)``: one pass over the three sorted
/// slot arrays, read in place; a slot both sides carried over unchanged costs one bitwise compare.
struct ThreeWayMerge {
    let ancestor: Record, local: Record, remote: Record
    let policy: MergePolicy

    func fields(
        _ pa: UnsafeBufferPointer<Record.Field>, _ pl: UnsafeBufferPointer<Record.Field>,
        _ pr: UnsafeBufferPointer<Record.Field>
    ) -> [Record.Field] {
        var out = [Record.Field]()
        out.reserveCapacity(max(pl.count, pr.count))
        var i = 0, j = 0, k = 0
        let layout = SlotLayout.field
        while i < pa.count || j < pl.count || k < pr.count {
            // Fast path: both sides hold the same slot, whatever the ancestor had.
            if j < pl.count && k < pr.count, let l = pl.baseAddress.map({ $0 + j }),
                let r = pr.baseAddress.map({ $0 + k }),
                SlotEquality.identical(l, r, layout)
            {
                while i < pa.count, let a = pa.baseAddress.map({ $0 + i }), SlotEquality.order(a, l, layout) < 0 {
                    i &+= 1
                }
                if i < pa.count, let a = pa.baseAddress.map({ $0 + i }), SlotEquality.order(a, l, layout) == 0 {
                    i &+= 1
                }
                out.append(l.pointee)
                j &+= 1
                k &+= 1
                continue
            }
            // The smallest name among the three, and each side's slot of it.
            var least: UnsafePointer<Record.Field>? = nil
            if i < pa.count { least = pa.baseAddress.map { $0 + i } }
            if j < pl.count, let l = pl.baseAddress.map({ $0 + j }),
                least.map({ SlotEquality.order(l, $0, layout) < 0 }) ?? true
            {
                least = l
            }
            if k < pr.count, let r = pr.baseAddress.map({ $0 + k }),
                least.map({ SlotEquality.order(r, $0, layout) < 0 }) ?? true
            {
                least = r
            }
            guard let least else { break }
            var a: Record.Field? = nil, l: Record.Field? = nil, r: Record.Field? = nil
            if i < pa.count, let p = pa.baseAddress.map({ $0 + i }), SlotEquality.order(p, least, layout) == 0 {
                a = p.pointee; i &+= 1
            }
            if j < pl.count, let p = pl.baseAddress.map({ $0 + j }), SlotEquality.order(p, least, layout) == 0 {
                l = p.pointee; j &+= 1
            }
            if k < pr.count, let p = pr.baseAddress.map({ $0 + k }), SlotEquality.order(p, least, layout) == 0 {
                r = p.pointee; k &+= 1
            }
            if let merged = decide(name: (l ?? r ?? a)?.name ?? "", a, l, r) { out.append(merged) }
        }
        return out
    }

    /// The merged slot of one field, given the ancestor's, local and remote slots (nil: absent).
    func decide(name: String, _ a: Record.Field?, _ l: Record.Field?, _ r: Record.Field?) -> Record.Field? {
        if l == r { return l }
        if l == a { return r }
        if r == a { return l }
        let zone = local.id.zone
        if l?.value == r?.value {
            // Both changed to the same value: not a conflict; keep the later slot.
            if let x = l, let y = r { return LastWriterWins.winner(x, y, zone: zone) }
            return l ?? r
        }
        switch policy.rule {
        case .lastWriterWins:
            // A removed slot ranks as an unsaved removal.
            let x = l ?? Record.Field(name: name, value: nil), y = r ?? Record.Field(name: name, value: nil)
            return LastWriterWins.compare(x, y, zone: zone) >= 0 ? l : r
        case .resolver(let resolve):
            switch resolve(MergeConflict(fieldName: name, ancestor: ancestor, local: local, remote: remote)) {
            case .local: return l
            case .remote: return r
            case .value(let v): return Record.Field(name: name, value: v, stamp: nil)
            }
        }
    }
}
