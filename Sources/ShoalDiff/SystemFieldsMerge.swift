// SystemFieldsMerge: merging two versions' system fields — vector union, surviving heads, type, parent.

package import ShoalWire

/// How both merges combine the system fields of two versions of one record.
///
/// Every rule is symmetric in its two arguments, so both nodes of a pair compute the same bytes:
/// the version vector is the union; a head survives unless the other side has seen that write and
/// moved past it; the creation is the latest; extensions are united by tag; the record type and
/// parent, which carry no stamps, follow the causally later side, else the side with the newest
/// write, else the larger value.
package enum SystemFieldsMerge {
    /// The merged heads: each side's heads the other side's vector does not cover, plus heads
    /// both hold for the same write (a save there beats a delete: modification beats deletion).
    package static func heads(_ a: Record, _ b: Record) -> [Record.Head] {
        var out = [Record.Head]()
        out.reserveCapacity(a.heads.count &+ b.heads.count)
        var i = 0, j = 0
        while i < a.heads.count || j < b.heads.count {
            if j == b.heads.count || (i < a.heads.count && a.heads[i].node < b.heads[j].node) {
                let h = a.heads[i]
                if !covers(b, h, of: a) { out.append(h) }
                i &+= 1
            } else if i == a.heads.count || b.heads[j].node < a.heads[i].node {
                let h = b.heads[j]
                if !covers(a, h, of: b) { out.append(h) }
                j &+= 1
            } else {
                let ha = a.heads[i], hb = b.heads[j]
                let ta = a.versionVector[ha.node], tb = b.versionVector[hb.node]
                if ta == tb {
                    out.append(Record.Head(node: ha.node, isDeletion: ha.isDeletion && hb.isDeletion))
                } else {
                    out.append(ta > tb ? ha : hb)
                }
                i &+= 1
                j &+= 1
            }
        }
        return out
    }

    /// Whether `other`'s vector has seen the write that is head `h` of `side`.
    static func covers(_ other: Record, _ h: Record.Head, of side: Record) -> Bool {
        let t = side.versionVector[h.node]
        return other.versionVector[h.node] >= t
    }

    /// The latest creation either side has seen, or whichever is known.
    ///
    /// A version that dominates another has a creation at least as late (it inherits it, or
    /// re-created the record after a delete with a newer dot), so "the larger dot" agrees with
    /// replacing a dominated version and is a join: any order of merges gives the same creation.
    /// "The earlier" diverges once a record is deleted and re-created concurrently with an edit
    /// (the replication simulation found it: Spec/diff-and-merge.md).
    package static func creation(_ a: Dot?, _ b: Dot?) -> Dot? {
        switch (a, b) {
        case let (x?, y?): return max(x, y)
        case (nil, _): return b
        case (_, nil): return a
        }
    }

    /// Extensions of both, by tag; for one tag with different bytes, the larger bytes.
    package static func extensions(_ a: [Record.Extension], _ b: [Record.Extension]) -> [Record.Extension] {
        if a == b { return a }
        var out = [Record.Extension]()
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i].tag < b[j].tag) {
                out.append(a[i]); i &+= 1
            } else if i == a.count || b[j].tag < a[i].tag {
                out.append(b[j]); j &+= 1
            } else {
                out.append(a[i].bytes.lexicographicallyPrecedes(b[j].bytes) ? b[j] : a[i])
                i &+= 1
                j &+= 1
            }
        }
        return out
    }

    /// 1 when `a`'s unstamped system fields win, −1 when `b`'s do, 0 when the sides tie: the
    /// causally later side, else the side whose newest write is later.
    package static func side(_ a: Record, _ b: Record) -> Int {
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

    /// The record type: `a`'s or `b`'s by ``side(_:_:)``, else the larger in UTF-8 order.
    package static func recordType(_ a: Record, _ b: Record, side s: Int) -> String {
        if a.recordType == b.recordType { return a.recordType }
        if s != 0 { return s > 0 ? a.recordType : b.recordType }
        return UTF8Order.compare(a.recordType, b.recordType) > 0 ? a.recordType : b.recordType
    }

    /// The parent: `a`'s or `b`'s by ``side(_:_:)``, else the larger (nil lowest).
    package static func parent(_ a: Record, _ b: Record, side s: Int) -> Reference? {
        if a.parent == b.parent { return a.parent }
        if s != 0 { return s > 0 ? a.parent : b.parent }
        guard let x = a.parent else { return b.parent }
        guard let y = b.parent else { return a.parent }
        if x.recordID != y.recordID { return x.recordID < y.recordID ? y : x }
        return x.action.rawValue < y.action.rawValue ? y : x
    }
}
