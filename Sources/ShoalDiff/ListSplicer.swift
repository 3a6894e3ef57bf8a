// ListSplicer: element-wise edits between two lists of one kind, and applying them.

package import ShoalWire

/// Computes and applies ``ShoalWire/RecordDelta/ListSplice`` edits.
///
/// Computing trims the common prefix and suffix, then diffs the middle with Myers' algorithm (the
/// standard library's `difference(from:by:)`), so an append, an insertion or a removal costs one
/// short splice. Middles longer than ``maxMyersElements`` are replaced by one splice instead, to
/// bound time on huge rewrites.
package enum ListSplicer {
    /// Longest middle (old plus new elements) diffed element by element.
    package static let maxMyersElements = 2048

    /// Splices turning `old` into `new`; nil when their element kinds differ.
    package static func splices(from old: ListValue, to new: ListValue) -> [RecordDelta.ListSplice]? {
        switch (old, new) {
        case let (.string(a), .string(b)): return splices(a, b, ListValue.string, same: ==)
        case let (.int64(a), .int64(b)): return splices(a, b, ListValue.int64, same: ==)
        case let (.double(a), .double(b)): return splices(a, b, ListValue.double, same: sameDouble)
        case let (.bool(a), .bool(b)): return splices(a, b, ListValue.bool, same: ==)
        case let (.bytes(a), .bytes(b)): return splices(a, b, ListValue.bytes, same: ==)
        case let (.date(a), .date(b)): return splices(a, b, ListValue.date, same: ==)
        case let (.reference(a), .reference(b)): return splices(a, b, ListValue.reference, same: ==)
        case let (.asset(a), .asset(b)): return splices(a, b, ListValue.asset, same: ==)
        case let (.location(a), .location(b)): return splices(a, b, ListValue.location, same: ==)
        default: return nil
        }
    }

    static func sameDouble(_ a: Double, _ b: Double) -> Bool { CanonicalDouble.same(a, b) }

    /// Encoded size of a splice operation's body (element kind, count, edits) in `zone`.
    package static func encodedSize(_ edits: [RecordDelta.ListSplice], zone: RecordZone.ID) -> Int {
        var n = 1 &+ WireSize.varint(UInt64(edits.count))
        for e in edits {
            n &+= WireSize.varint(UInt64(e.offset)) &+ WireSize.varint(UInt64(e.deleteCount))
            n &+= e.insert.payloadSize(zone: zone)
        }
        return n
    }

    static func splices<T>(
        _ a: [T], _ b: [T], _ wrap: ([T]) -> ListValue,
        same: (T, T) -> Bool
    ) -> [RecordDelta.ListSplice] {
        var lo = 0
        while lo < a.count && lo < b.count && same(a[lo], b[lo]) { lo &+= 1 }
        var endA = a.count, endB = b.count
        while endA > lo && endB > lo && same(a[endA &- 1], b[endB &- 1]) {
            endA &-= 1
            endB &-= 1
        }
        if endA == lo && endB == lo { return [] }
        let midA = a[lo..<endA], midB = b[lo..<endB]
        if midA.isEmpty || midB.isEmpty || midA.count &+ midB.count > maxMyersElements {
            return [RecordDelta.ListSplice(offset: lo, deleteCount: midA.count, insert: wrap(Array(midB)))]
        }
        // Mark what Myers removes from the old middle and inserts from the new one, then walk both:
        // a run of removals and insertions between two kept elements is one splice.
        var removed = [Bool](repeating: false, count: midA.count)
        var inserted = [Bool](repeating: false, count: midB.count)
        for change in midB.difference(from: midA, by: same) {
            switch change {
            case .remove(let offset, _, _): removed[offset] = true
            case .insert(let offset, _, _): inserted[offset] = true
            }
        }
        var out = [RecordDelta.ListSplice]()
        var i = 0, j = 0
        while i < midA.count || j < midB.count {
            let iRemoved = i < midA.count && removed[i]
            let jInserted = j < midB.count && inserted[j]
            if !iRemoved && !jInserted {
                i &+= 1
                j &+= 1
                continue
            }
            let startI = i, startJ = j
            while i < midA.count && removed[i] { i &+= 1 }
            while j < midB.count && inserted[j] { j &+= 1 }
            out.append(
                RecordDelta.ListSplice(
                    offset: lo &+ startI, deleteCount: i &- startI,
                    insert: wrap(Array(midB[(lo &+ startJ)..<(lo &+ j)]))))
        }
        return out
    }

    // MARK: Applying

    /// `list` with `edits` applied.
    /// - Throws: ``DiffError`` `.outOfRange` for edits past the end, overlapping, touching, out
    ///   of order or empty; `.kindMismatch` for inserted elements of another kind.
    package static func apply(_ edits: [RecordDelta.ListSplice], to list: ListValue, field: String) throws(DiffError)
        -> ListValue
    {
        switch list {
        case .string(let v):
            return .string(try splice(v, edits, field, list) { if case .string(let x) = $0 { x } else { nil } })
        case .int64(let v):
            return .int64(try splice(v, edits, field, list) { if case .int64(let x) = $0 { x } else { nil } })
        case .double(let v):
            return .double(try splice(v, edits, field, list) { if case .double(let x) = $0 { x } else { nil } })
        case .bool(let v):
            return .bool(try splice(v, edits, field, list) { if case .bool(let x) = $0 { x } else { nil } })
        case .bytes(let v):
            return .bytes(try splice(v, edits, field, list) { if case .bytes(let x) = $0 { x } else { nil } })
        case .date(let v):
            return .date(try splice(v, edits, field, list) { if case .date(let x) = $0 { x } else { nil } })
        case .reference(let v):
            return .reference(try splice(v, edits, field, list) { if case .reference(let x) = $0 { x } else { nil } })
        case .asset(let v):
            return .asset(try splice(v, edits, field, list) { if case .asset(let x) = $0 { x } else { nil } })
        case .location(let v):
            return .location(try splice(v, edits, field, list) { if case .location(let x) = $0 { x } else { nil } })
        }
    }

    static func splice<T>(
        _ base: [T], _ edits: [RecordDelta.ListSplice], _ field: String, _ list: ListValue,
        _ elements: (ListValue) -> [T]?
    ) throws(DiffError) -> [T] {
        try EditRange.check(
            edits.lazy.map { ($0.offset, $0.deleteCount, $0.insert.count) }, count: edits.count,
            baseCount: base.count, field: field, unit: "element")
        var out = [T]()
        var grown = base.count
        for e in edits { grown = grown &- e.deleteCount &+ e.insert.count }
        out.reserveCapacity(grown)
        var at = 0
        for e in edits {
            guard let insert = elements(e.insert) else {
                throw DiffError(
                    .kindMismatch, field: field, offset: e.offset,
                    "a splice inserts \(e.insert.elementKind) elements into a list of \(list.elementKind); the delta was computed from another value — refetch the record"
                )
            }
            out.append(contentsOf: base[at..<e.offset])
            out.append(contentsOf: insert)
            at = e.offset &+ e.deleteCount
        }
        out.append(contentsOf: base[at...])
        return out
    }
}
