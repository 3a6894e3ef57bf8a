// NodeRef: a node of the encoding tree while containers are still writing into it.

/// A node under construction: containers keep writing into it until the value is encoded.
final class NodeRef {
    enum Content {
        case empty
        case leaf(CodableNode)
        case array([NodeRef])
        case object([String: NodeRef])
    }

    var content: Content

    init(_ content: Content = .empty) { self.content = content }

    /// The finished tree; a value that asked for no container is an empty object.
    var node: CodableNode {
        switch content {
        case .empty: return .object([:])
        case .leaf(let n): return n
        case .array(let refs): return .array(refs.map(\.node))
        case .object(let refs): return .object(refs.mapValues(\.node))
        }
    }
}
