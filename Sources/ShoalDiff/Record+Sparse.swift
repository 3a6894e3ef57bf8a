// Record+Sparse: reducing a version to what a peer lacks, and rebuilding it on the peer
// (Spec/replication.md §3.5.1).

public import ShoalWire

extension SparseRecord {
    /// `record` without the fields `base` wholly covers, or nil when it cannot travel sparse: it
    /// is deleted, unsaved, `base` does not cover its creation, or it has a deletion head (a save
    /// merged with a concurrent delete).
    ///
    /// `base` must be reflected by both the receiver's replica and this one (for example the
    /// meet of the receiver's stated knowledge and this node's knowledge). A field travels with
    /// all its slots when any of them is above `base`; the whole vector travels, and a digest of
    /// the creation and the omitted slots, so the receiver uses its copy only if that copy holds
    /// exactly what was left out. A version with a deletion head travels whole: the receiver
    /// may reflect that deletion only through a purge (its tombstone gone) while its stored
    /// version lacks the deletion's entries (Spec/replication.md §3.5.1, §3.5.3).
    public init?(_ record: Record, base: VersionVector) {
        guard !record.isDeleted, !record.heads.isEmpty, !record.heads.contains(where: \.isDeletion),
            let creation = record.creation, base.covers(creation)
        else { return nil }
        var digest = OmittedDigest(creation: creation)
        var fields = [Record.Field]()
        let slots = record.fields
        var i = 0
        while i < slots.count {
            let end = record.slotRunEnd(from: i)
            var above = false
            for k in i..<end {
                guard let stamp = slots[k].stamp else { return nil }
                if !base.covers(stamp) { above = true }
            }
            if above {
                fields.append(contentsOf: slots[i..<end])
            } else {
                for k in i..<end { digest.add(slots[k]) }
            }
            i = end
        }
        self.init(
            id: record.id, recordType: record.recordType, parent: record.parent, entries: record.versionVector,
            heads: record.heads, fields: fields, extensions: record.extensions, digest: digest.value)
    }
}

extension Record {
    /// Rebuilds the sender's version from the receiver's own version `local`; nil when `local`
    /// does not hold exactly what the sparse record left out (the caller then asks for whole
    /// versions).
    ///
    /// The rebuilt version has the sparse record's vector, heads, type, parent and extensions;
    /// its fields are the sparse slots (a field the sparse record carries comes with all its
    /// slots) plus `local`'s slots of the other fields that `base` covers; its creation is
    /// `local`'s. The sender left out exactly the slots of those fields and the creation, all
    /// covered by `base`; if `local`'s digest to the sparse record's ``SparseRecord/digest``, the
    /// rebuilt version is the sender's. They differ when `local` is of another lineage of the
    /// name (a tombstone purged and the name saved again), when a write `local` has not seen
    /// removed slots it holds, or when `local` holds a concurrent write of its own there.
    ///
    /// - Parameters:
    ///   - sparse: the received sparse record.
    ///   - base: the batch's base vector, which the receiver's knowledge must cover.
    ///   - local: the receiver's stored version of the record (live or a tombstone).
    ///   - bases: the receiver's versions that may hold the base values of the sparse record's
    ///     delta slots (its stored version and the one before it); `local` when empty.
    public init?(expanding sparse: SparseRecord, base: VersionVector, onto local: Record, bases: [Record] = []) {
        guard sparse.id == local.id, let creation = local.creation else { return nil }
        var digest = SparseRecord.OmittedDigest(creation: creation)
        var fields = [Record.Field]()
        fields.reserveCapacity(local.fields.count &+ sparse.fields.count &+ sparse.deltas.count)
        var sf = sparse.fields
        if !sparse.deltas.isEmpty {
            // Each delta slot becomes the whole slot it stands for, on the base value this node
            // holds; the slots then merge by name with the whole ones (their names are disjoint).
            var made = [Record.Field]()
            made.reserveCapacity(sparse.deltas.count)
            for d in sparse.deltas {
                guard let slot = d.slot(on: bases.isEmpty ? [local] : bases, zone: sparse.id.zone) else { return nil }
                made.append(slot)
            }
            sf = Self.mergedByName(sf, made)
        }
        let lf = local.fields
        var i = 0, j = 0
        while i < sf.count || j < lf.count {
            let c = i == sf.count ? 1 : j == lf.count ? -1 : UTF8Order.compare(sf[i].name, lf[j].name)
            if c <= 0 {
                // A field the sparse record carries: all its slots, none of the local ones.
                let name = sf[i].name
                while i < sf.count && UTF8Order.equal(sf[i].name, name) {
                    fields.append(sf[i])
                    i &+= 1
                }
                if c == 0 { j = local.slotRunEnd(from: j) }
            } else {
                if let stamp = lf[j].stamp, base.covers(stamp) {
                    fields.append(lf[j])
                    digest.add(lf[j])
                }
                j &+= 1
            }
        }
        guard digest.value == sparse.digest else { return nil }
        self.init(
            recordType: sparse.recordType, id: sparse.id, parent: sparse.parent, creation: creation,
            versionVector: sparse.entries, heads: sparse.heads, fields: fields, extensions: sparse.extensions)
    }
}

extension Record {
    /// Two slot lists sorted by name, with disjoint names, as one (each list's order kept).
    static func mergedByName(_ a: [Record.Field], _ b: [Record.Field]) -> [Record.Field] {
        var out = [Record.Field]()
        out.reserveCapacity(a.count &+ b.count)
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if j == b.count || i < a.count && UTF8Order.compare(a[i].name, b[j].name) < 0 {
                out.append(a[i])
                i &+= 1
            } else {
                out.append(b[j])
                j &+= 1
            }
        }
        return out
    }
}
