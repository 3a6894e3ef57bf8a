// Record+Sparse: reducing a version to what a peer lacks, and rebuilding it on the peer
// (Spec/replication.md §3.5.1).

public import ShoalWire

extension SparseRecord {
    /// `record` without the slots `base` covers, or nil when it cannot travel sparse: it is
    /// deleted, unsaved, `base` does not cover its creation, or it has a deletion head (a save
    /// merged with a concurrent delete).
    ///
    /// `base` must be reflected by both the receiver's replica and this one (for example the
    /// meet of the receiver's stated knowledge and this node's knowledge). The whole vector
    /// travels, with a floor for each entry above `base` whose node stamped an omitted slot or
    /// the creation, so the receiver can tell whether its copy holds what the omitted parts
    /// depend on. A version with a deletion head travels whole: the receiver may reflect that
    /// deletion only through a purge (its tombstone gone) while its stored version lacks the
    /// deletion's entries (Spec/replication.md §3.5.1, §3.5.3).
    public init?(_ record: Record, base: VersionVector) {
        guard !record.isDeleted, !record.heads.isEmpty, !record.heads.contains(where: \.isDeletion),
              let creation = record.creation, base.covers(creation) else { return nil }
        let vv = record.versionVector
        var floors = VersionVector()
        /// An omitted stamp `dot` raises its node's floor when that node's entry is above the base.
        func omitted(_ dot: Dot) {
            if vv[dot.node] > base[dot.node] && floors[dot.node] < dot.hlc { floors.advance(dot.node, to: dot.hlc) }
        }
        omitted(creation)
        var fields = [Record.Field]()
        for f in record.fields {
            guard let stamp = f.stamp else { return nil }
            if base.covers(stamp) { omitted(stamp) } else { fields.append(f) }
        }
        self.init(id: record.id, recordType: record.recordType, parent: record.parent,
                  entries: vv, heads: record.heads, fields: fields, extensions: record.extensions, floors: floors)
    }
}

extension Record {
    /// Rebuilds, from the receiver's own version `local`, a version that merges with `local`
    /// exactly as the sender's whole version would; nil when `local` cannot serve as the base
    /// (the caller then asks for whole versions): it has no creation, or it lacks a write the
    /// omitted parts depend on — an entry at or below `base`, or a floor — so it is not of the
    /// sender's lineage.
    ///
    /// The rebuilt vector is the sparse record's. Fields are the sparse slots plus `local`'s
    /// slots for the other names that the vector covers (the sender holds those, or a version
    /// both sides have seen superseded). A creation the vector does not cover (a re-creation the
    /// sender has not seen) is replaced by a placeholder that loses every merge, since merges
    /// keep the later creation.
    ///
    /// - Parameters:
    ///   - sparse: the received sparse record.
    ///   - base: the batch's base vector, which the receiver's knowledge must cover.
    ///   - local: the receiver's stored version of the record (live or a tombstone).
    public init?(expanding sparse: SparseRecord, base: VersionVector, onto local: Record) {
        guard sparse.id == local.id, let localCreation = local.creation else { return nil }
        // A receiver that reflects every write up to `base` holds, for this record, every write
        // the base covers: a lower entry or floor means those writes were reflected only through
        // a purge horizon, on a version of the name `local` no longer descends from (its
        // tombstone purged). `local` is then no base: not its creation, nor its slots.
        for e in sparse.entries.entries {
            let needed = e.hlc <= base[e.node] ? e.hlc : sparse.floors[e.node]
            if local.versionVector[e.node] < needed { return nil }
        }
        let vv = sparse.entries
        // The fields: sparse slots, plus the covered local slots of the other names.
        var fields = [Record.Field]()
        fields.reserveCapacity(local.fields.count &+ sparse.fields.count)
        let sf = sparse.fields, lf = local.fields
        var i = 0, j = 0
        while i < sf.count || j < lf.count {
            let c = i == sf.count ? 1 : j == lf.count ? -1 : UTF8Order.compare(sf[i].name, lf[j].name)
            if c < 0 {
                fields.append(sf[i])
                i &+= 1
            } else {
                if c > 0, let stamp = lf[j].stamp, vv.covers(stamp) { fields.append(lf[j]) }
                if c == 0 {
                    fields.append(sf[i])
                    i &+= 1
                }
                j &+= 1
            }
        }
        let creation: Dot
        if vv.covers(localCreation) {
            creation = localCreation
        } else {
            guard let first = vv.entries.first, localCreation.hlc.rawValue > 1 else { return nil }
            creation = Dot(node: first.node, hlc: HLC(rawValue: 1))
        }
        self.init(recordType: sparse.recordType, id: sparse.id, parent: sparse.parent, creation: creation, versionVector: vv,
                  heads: sparse.heads, fields: fields, extensions: sparse.extensions)
    }
}
