// Dot: one write, named by the node that made it and the HLC timestamp it got.

/// One write event: the node that made it and its hybrid logical clock timestamp.
///
/// A node's timestamps strictly increase, so a dot names exactly one write. Dots order by
/// `(hlc, node)`: that is the last-writer-wins order every node computes identically.
public struct Dot: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The node that made the write.
    public var node: NodeID
    /// When it made it.
    public var hlc: HLC

    /// Creates a dot.
    public init(node: NodeID, hlc: HLC) {
        self.node = node
        self.hlc = hlc
    }

    public static func < (a: Dot, b: Dot) -> Bool {
        a.hlc != b.hlc ? a.hlc < b.hlc : a.node < b.node
    }

    public var description: String { "\(node.short)@\(hlc.rawValue)" }
}
