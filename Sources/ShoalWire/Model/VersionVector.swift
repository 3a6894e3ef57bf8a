// VersionVector: for each node, the newest of its writes that a state has seen.

/// For each node, the HLC timestamp of the newest write of that node a state has seen.
///
/// Entries are kept sorted by node ID (one encoding per vector). A vector *covers* a dot when its
/// entry for the dot's node is at or past the dot's timestamp. Record versions, zone states and
/// change tokens are all described by vectors; ``compare(_:)`` tells which of two states has seen
/// more, or that they are concurrent.
public struct VersionVector: Hashable, Sendable, CustomStringConvertible {
    /// One node's entry.
    public struct Entry: Hashable, Sendable {
        /// The node.
        public var node: NodeID
        /// Its newest write seen.
        public var hlc: HLC
        /// Creates an entry.
        public init(node: NodeID, hlc: HLC) {
            self.node = node
            self.hlc = hlc
        }
    }

    /// The entries, strictly increasing by node ID, none with a zero timestamp.
    public private(set) var entries: [Entry]

    /// The empty vector: has seen nothing.
    public init() { entries = [] }

    /// Creates a vector from entries in any order; duplicates keep the larger timestamp.
    public init(_ pairs: some Sequence<(NodeID, HLC)>) {
        entries = []
        for (n, h) in pairs { advance(n, to: h) }
    }

    /// Creates a vector from entries already sorted and unique (the decoder checks this).
    package init(sortedEntries: [Entry]) { entries = sortedEntries }

    /// Whether no write has been seen.
    public var isEmpty: Bool { entries.isEmpty }

    /// The number of nodes with an entry.
    public var count: Int { entries.count }

    /// The entry for `node`, or ``HLC/zero``.
    public subscript(node: NodeID) -> HLC {
        if let i = index(of: node) { return entries[i].hlc }
        return .zero
    }

    /// The position of `node`'s entry, if any (binary search).
    public func index(of node: NodeID) -> Int? {
        var lo = 0, hi = entries.count
        while lo < hi {
            let mid = (lo &+ hi) >> 1
            let n = entries[mid].node
            if n == node { return mid }
            if n < node { lo = mid &+ 1 } else { hi = mid }
        }
        return nil
    }

    /// Whether this vector has seen the write `dot`.
    public func covers(_ dot: Dot) -> Bool { self[dot.node] >= dot.hlc }

    /// Raises `node`'s entry to `hlc` if it is lower.
    public mutating func advance(_ node: NodeID, to hlc: HLC) {
        guard hlc != .zero else { return }
        var lo = 0, hi = entries.count
        while lo < hi {
            let mid = (lo &+ hi) >> 1
            let n = entries[mid].node
            if n == node {
                if entries[mid].hlc < hlc { entries[mid].hlc = hlc }
                return
            }
            if n < node { lo = mid &+ 1 } else { hi = mid }
        }
        entries.insert(Entry(node: node, hlc: hlc), at: lo)
    }

    /// Raises every entry to at least `other`'s (the least upper bound).
    public mutating func formUnion(_ other: VersionVector) {
        if other.entries.isEmpty { return }
        if entries.isEmpty { entries = other.entries; return }
        // Every node of `other` already here (a zone's vector absorbing one more version of the
        // nodes writing to it, once per applied record): raise the entries in place, no new array.
        if coversNodes(of: other) {
            var i = 0
            for o in other.entries {
                while entries[i].node < o.node { i += 1 }
                if entries[i].hlc < o.hlc { entries[i].hlc = o.hlc }
                i += 1
            }
            return
        }
        var out = [Entry]()
        out.reserveCapacity(entries.count + other.entries.count)
        var i = 0, j = 0
        while i < entries.count || j < other.entries.count {
            if j == other.entries.count || (i < entries.count && entries[i].node < other.entries[j].node) {
                out.append(entries[i]); i += 1
            } else if i == entries.count || other.entries[j].node < entries[i].node {
                out.append(other.entries[j]); j += 1
            } else {
                out.append(Entry(node: entries[i].node, hlc: max(entries[i].hlc, other.entries[j].hlc)))
                i += 1; j += 1
            }
        }
        entries = out
    }

    /// Whether every node of `other` has an entry here (both lists are sorted by node).
    private func coversNodes(of other: VersionVector) -> Bool {
        var i = 0
        for o in other.entries {
            while i < entries.count && entries[i].node < o.node { i += 1 }
            guard i < entries.count, entries[i].node == o.node else { return false }
            i += 1
        }
        return true
    }

    /// The entries of this vector above `other`'s: what someone who was told `other` has not yet
    /// been told of this one (`other.union(result) == other.union(self)`).
    public func entries(above other: VersionVector) -> VersionVector {
        VersionVector(sortedEntries: entries.filter { $0.hlc > other[$0.node] })
    }

    /// The least upper bound of two vectors.
    public func union(_ other: VersionVector) -> VersionVector {
        var v = self
        v.formUnion(other)
        return v
    }

    /// The greatest lower bound of two vectors: per node, the lesser entry (writes both have seen,
    /// when both are knowledge vectors).
    public func meet(_ other: VersionVector) -> VersionVector {
        var out = [Entry]()
        out.reserveCapacity(Swift.min(entries.count, other.entries.count))
        var i = 0, j = 0
        let a = entries, b = other.entries
        while i < a.count && j < b.count {
            if a[i].node < b[j].node {
                i += 1
            } else if b[j].node < a[i].node {
                j += 1
            } else {
                out.append(Entry(node: a[i].node, hlc: Swift.min(a[i].hlc, b[j].hlc)))
                i += 1; j += 1
            }
        }
        return VersionVector(sortedEntries: out)
    }

    /// How two states relate causally.
    public enum Ordering: Sendable, Hashable {
        /// Both have seen exactly the same writes.
        case equal
        /// `self` has seen a strict subset of the other's writes.
        case before
        /// `self` has seen a strict superset of the other's writes.
        case after
        /// Each has seen a write the other has not.
        case concurrent
    }

    /// Compares what two states have seen.
    public func compare(_ other: VersionVector) -> Ordering {
        var less = false, greater = false
        var i = 0, j = 0
        let a = entries, b = other.entries
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i].node < b[j].node) {
                greater = true; i += 1
            } else if i == a.count || b[j].node < a[i].node {
                less = true; j += 1
            } else {
                if a[i].hlc < b[j].hlc { less = true } else if a[i].hlc > b[j].hlc { greater = true }
                i += 1; j += 1
            }
            if less && greater { return .concurrent }
        }
        switch (less, greater) {
        case (false, false): return .equal
        case (true, false): return .before
        case (false, true): return .after
        case (true, true): return .concurrent
        }
    }

    /// Whether every write `self` has seen, `other` has seen too.
    public func isDominated(by other: VersionVector) -> Bool {
        let o = compare(other)
        return o == .equal || o == .before
    }

    /// The newest write seen, by `(hlc, node)`; nil when empty.
    public var latest: Dot? {
        var best: Dot? = nil
        for e in entries {
            let d = Dot(node: e.node, hlc: e.hlc)
            if best.map({ $0 < d }) ?? true { best = d }
        }
        return best
    }

    public var description: String {
        "[" + entries.map { "\($0.node.short):\($0.hlc.rawValue)" }.joined(separator: ", ") + "]"
    }
}
