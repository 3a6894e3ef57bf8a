// VectorChange: a version vector written against one both sides already hold — the knowledge a
// subscription has stated — so that a live batch names a node in a byte instead of sixteen
// (Spec/replication.md §3.5.4, "Vectors against the stated knowledge").

/// Writes and reads the entries of a vector as differences from a reference vector `R`.
///
/// Layout: the entry count (varint, at most `maxVectorEntries`), then per entry, in strictly
/// increasing node order: a key (varint) — `k < R.count` names `R`'s `k`-th node (in node order),
/// `k == R.count` says a node `R` lacks follows as its 16 bytes — and `zigzag(value − R[node])`
/// (modulo 2^64, as a sparse item's entries).
///
/// A **stated knowledge** is written as its own entries (each value non-zero). A **base** is
/// written as its changes: the nodes whose entry differs from `R`'s, a value of 0 removing a node
/// of `R`; the base is `R` with those changes.
package enum VectorChange {
    /// What the entries describe, which decides what is valid.
    package enum Meaning {
        /// The vector's own entries: every value is non-zero.
        case entries
        /// Changes to the reference: no entry equals the reference's, and a value of 0 removes a
        /// node the reference has.
        case changes
    }

    /// One entry: a node and its value (0: the node is removed, for ``Meaning/changes``).
    package struct Entry: Hashable, Sendable {
        package var node: NodeID
        package var value: UInt64
    }

    /// The changes that turn `reference` into `vector`, in node order.
    package static func changes(from reference: VersionVector, to vector: VersionVector) -> [Entry] {
        var out = [Entry]()
        var i = 0, j = 0
        let a = reference.entries, b = vector.entries
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i].node < b[j].node) {
                out.append(Entry(node: a[i].node, value: 0))
                i &+= 1
            } else if i == a.count || b[j].node < a[i].node {
                out.append(Entry(node: b[j].node, value: b[j].hlc.rawValue))
                j &+= 1
            } else {
                if a[i].hlc != b[j].hlc { out.append(Entry(node: b[j].node, value: b[j].hlc.rawValue)) }
                i &+= 1
                j &+= 1
            }
        }
        return out
    }

    /// A vector's own entries.
    package static func entries(of vector: VersionVector) -> [Entry] {
        vector.entries.map { Entry(node: $0.node, value: $0.hlc.rawValue) }
    }

    /// `reference` with `changes` made (a value of 0 removes the node).
    package static func applying(_ changes: [Entry], to reference: VersionVector) -> VersionVector {
        var out = [VersionVector.Entry]()
        out.reserveCapacity(reference.count &+ changes.count)
        var i = 0
        let a = reference.entries
        for c in changes {
            while i < a.count && a[i].node < c.node { out.append(a[i]); i &+= 1 }
            if i < a.count && a[i].node == c.node { i &+= 1 }
            if c.value != 0 { out.append(.init(node: c.node, hlc: HLC(rawValue: c.value))) }
        }
        while i < a.count { out.append(a[i]); i &+= 1 }
        return VersionVector(sortedEntries: out)
    }

    /// The entries as a vector (``Meaning/entries``: no value is 0).
    package static func vector(_ entries: [Entry]) -> VersionVector {
        VersionVector(sortedEntries: entries.map { .init(node: $0.node, hlc: HLC(rawValue: $0.value)) })
    }

    /// The key of `node`: its index in `reference`, or `reference.count` when it lacks it.
    static func key(_ node: NodeID, in reference: VersionVector) -> Int {
        reference.index(of: node) ?? reference.count
    }

    static func difference(_ e: Entry, _ reference: VersionVector) -> UInt64 {
        WireSize.zigzag(Int64(bitPattern: e.value &- reference[e.node].rawValue))
    }

    /// The size of ``write(_:against:into:)``.
    package static func size(_ entries: [Entry], against reference: VersionVector) -> Int {
        var n = WireSize.varint(UInt64(entries.count))
        for e in entries {
            let k = key(e.node, in: reference)
            n &+=
                WireSize.varint(UInt64(k)) &+ (k == reference.count ? 16 : 0)
                &+ WireSize.varint(difference(e, reference))
        }
        return n
    }

    /// Writes `entries` (in node order) against `reference`.
    package static func write(_ entries: [Entry], against reference: VersionVector, into w: inout WireWriter) {
        w.writeVarint(UInt64(entries.count))
        for e in entries {
            let k = key(e.node, in: reference)
            w.writeVarint(UInt64(k))
            if k == reference.count { w.writeNodeID(e.node) }
            w.writeVarint(difference(e, reference))
        }
    }

    /// Reads entries written against `reference`, checking the count's limit, each key, node
    /// order, and what `meaning` requires of each value.
    /// - Throws: ``WireError``: `limit_exceeded` (count), `truncated`, `invalid_value` (a key
    ///   beyond `reference.count`, a node of `reference` written out, a zero entry, a change
    ///   equal to the reference's entry), `duplicate` or `unsorted` (node order, at the key).
    package static func read(
        _ r: inout WireReader, against reference: VersionVector, meaning: Meaning,
        _ what: @autoclosure () -> String
    ) throws(WireError) -> [Entry] {
        let n = try r.readCount(max: r.limits.maxVectorEntries, "\(what()) entry count", limitName: "maxVectorEntries")
        try r.require(n, each: 2, "\(n) \(what()) entries")
        var out = [Entry]()
        out.reserveCapacity(n)
        for _ in 0..<n {
            let kAt = r.offset
            let k = try r.readVarint("\(what()) key")
            guard k <= UInt64(reference.count) else {
                throw WireError(
                    .invalidValue, at: kAt,
                    "\(what()) key \(k) names no node: the stated knowledge it is written against has \(reference.count) entries"
                )
            }
            let node: NodeID
            if k < UInt64(reference.count) {
                node = reference.entries[Int(k)].node
            } else {
                let nAt = r.offset
                node = try r.readNodeID("\(what()) node")
                if let i = reference.index(of: node) {
                    throw WireError(
                        .invalidValue, at: nAt,
                        "\(what()) writes out node \(node), which the stated knowledge holds as key \(i); it is named by its key"
                    )
                }
            }
            if let p = out.last?.node, node <= p {
                throw WireError(
                    node == p ? .duplicate : .unsorted, at: kAt,
                    "\(what()) nodes must strictly increase; \(node) follows \(p)")
            }
            let dAt = r.offset
            let d = try r.readZigzag("\(what()) difference")
            let value = reference[node].rawValue &+ UInt64(bitPattern: d)
            switch meaning {
            case .entries where value == 0:
                throw WireError(.invalidValue, at: dAt, "\(what()) entry for \(node) is zero; zero entries are omitted")
            case .changes where d == 0:
                throw WireError(
                    .invalidValue, at: dAt,
                    "\(what()) restates the entry of \(node) that it is written against; unchanged entries are left out"
                )
            default:
                break
            }
            out.append(Entry(node: node, value: value))
        }
        return out
    }
}
