// RecordMerge: the dot-driven, ancestor-free merge of two concurrent versions of one record.
// Interim: ShoalDiff's `merge(_:_:)` (branch wip/diff) implements the same rules; the store
// switches to it once that module lands.

import ShoalWire

/// Merges two versions of one record without their common ancestor, symmetrically.
///
/// Per field slot: equal slots stay; a slot whose stamp the other side's vector covers (and that
/// differs there) was superseded, so the other side's slot — or its absence — wins; otherwise the
/// edits are concurrent and the larger stamp wins (HLC, then node). System fields: vectors union;
/// a head survives unless the other side has seen that write; for one node's same write, a save
/// beats a delete; creation is the earlier; record type and parent follow the causally later side,
/// else the side with the newest write, else the larger value. A save concurrent with a delete
/// keeps a save head, so the record stays live (``Record/isDeleted`` is false).
enum RecordMerge {
    static func merge(_ a: Record, _ b: Record) -> Record {
        var fields = [Record.Field]()
        fields.reserveCapacity(max(a.fields.count, b.fields.count))
        var i = 0, j = 0
        let av = a.versionVector, bv = b.versionVector
        while i < a.fields.count || j < b.fields.count {
            let c = i == a.fields.count ? 1 : j == b.fields.count ? -1 : UTF8Order.compare(a.fields[i].name, b.fields[j].name)
            if c < 0 {
                let x = a.fields[i]
                if !(x.stamp.map(bv.covers) ?? false) { fields.append(x) }
                i += 1
            } else if c > 0 {
                let y = b.fields[j]
                if !(y.stamp.map(av.covers) ?? false) { fields.append(y) }
                j += 1
            } else {
                let x = a.fields[i], y = b.fields[j]
                if x == y {
                    fields.append(x)
                } else {
                    let xSuperseded = x.stamp.map(bv.covers) ?? false
                    let ySuperseded = y.stamp.map(av.covers) ?? false
                    if xSuperseded != ySuperseded {
                        fields.append(xSuperseded ? y : x)
                    } else {
                        fields.append(ranks(x, above: y) ? x : y)
                    }
                }
                i += 1
                j += 1
            }
        }
        let side = Self.side(a, b)
        var recordType = a.recordType
        if a.recordType != b.recordType {
            recordType = side != 0 ? (side > 0 ? a.recordType : b.recordType)
                : (UTF8Order.compare(a.recordType, b.recordType) > 0 ? a.recordType : b.recordType)
        }
        var parent = a.parent
        if a.parent != b.parent {
            if side != 0 {
                parent = side > 0 ? a.parent : b.parent
            } else if let x = a.parent, let y = b.parent {
                parent = x.recordID != y.recordID ? (x.recordID < y.recordID ? y : x) : (x.action.rawValue < y.action.rawValue ? y : x)
            } else {
                parent = a.parent ?? b.parent
            }
        }
        // Creation is the latest (re-)creation either side has seen. A version that dominates
        // another has a creation at least as late (it inherits it, or re-created the record after
        // a delete with a newer dot), so "the larger dot" agrees with replacing a dominated version
        // and is a join: any order of merges gives the same creation. ("The earlier", or "the one
        // the other side has not seen", both diverge once a record is deleted and re-created
        // concurrently with an edit; the simulation found both.)
        let creation: Dot? = switch (a.creation, b.creation) {
        case let (x?, y?): max(x, y)
        case (nil, _): b.creation
        case (_, nil): a.creation
        }
        return Record(recordType: recordType, id: a.id, parent: parent, creation: creation,
                      versionVector: av.union(bv), heads: heads(a, b), fields: fields,
                      extensions: extensions(a.extensions, b.extensions))
    }

    /// Last-writer-wins order of two concurrent slots: larger stamp, then (equal stamps, which
    /// only corrupt input produces) the larger value bytes, removal lowest.
    static func ranks(_ x: Record.Field, above y: Record.Field) -> Bool {
        switch (x.stamp, y.stamp) {
        case let (s?, t?) where s != t: return s > t
        case (nil, _?): return false
        case (_?, nil): return true
        default:
            guard let xv = x.value else { return false }
            guard let yv = y.value else { return true }
            return Self.valueBytes(yv).lexicographicallyPrecedes(Self.valueBytes(xv))
        }
    }

    static func valueBytes(_ v: FieldValue) -> [UInt8] {
        var r = Record(recordType: "V", id: Record.ID(name: "v", zone: RecordZone.ID(name: "v")))
        r["v"] = v
        return r.encoded()
    }

    static func heads(_ a: Record, _ b: Record) -> [Record.Head] {
        var out = [Record.Head]()
        var i = 0, j = 0
        while i < a.heads.count || j < b.heads.count {
            if j == b.heads.count || (i < a.heads.count && a.heads[i].node < b.heads[j].node) {
                let h = a.heads[i]
                if b.versionVector[h.node] < a.versionVector[h.node] { out.append(h) }
                i += 1
            } else if i == a.heads.count || b.heads[j].node < a.heads[i].node {
                let h = b.heads[j]
                if a.versionVector[h.node] < b.versionVector[h.node] { out.append(h) }
                j += 1
            } else {
                let ha = a.heads[i], hb = b.heads[j]
                let ta = a.versionVector[ha.node], tb = b.versionVector[hb.node]
                if ta == tb {
                    out.append(Record.Head(node: ha.node, isDeletion: ha.isDeletion && hb.isDeletion))
                } else {
                    out.append(ta > tb ? ha : hb)
                }
                i += 1
                j += 1
            }
        }
        return out
    }

    static func side(_ a: Record, _ b: Record) -> Int {
        switch a.versionVector.compare(b.versionVector) {
        case .after: return 1
        case .before: return -1
        case .equal, .concurrent:
            switch (a.versionVector.latest, b.versionVector.latest) {
            case let (x?, y?) where x != y: return x < y ? -1 : 1
            default: return 0
            }
        }
    }

    static func extensions(_ a: [Record.Extension], _ b: [Record.Extension]) -> [Record.Extension] {
        if a == b { return a }
        var out = [Record.Extension]()
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i].tag < b[j].tag) {
                out.append(a[i]); i += 1
            } else if i == a.count || b[j].tag < a[i].tag {
                out.append(b[j]); j += 1
            } else {
                out.append(a[i].bytes.lexicographicallyPrecedes(b[j].bytes) ? b[j] : a[i])
                i += 1
                j += 1
            }
        }
        return out
    }
}
