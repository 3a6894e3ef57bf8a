// NodeUnkeyedEncodingContainer: an unkeyed container writing a CodableNode array.

/// Appends the elements of an array node.
struct NodeUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    let encoder: NodeEncoder
    let ref: NodeRef
    let codingPath: [any CodingKey]

    var count: Int {
        if case .array(let refs) = ref.content { return refs.count }
        return 0
    }

    func append(_ child: NodeRef) {
        guard case .array(var refs) = ref.content else { return }
        ref.content = .empty
        refs.append(child)
        ref.content = .array(refs)
    }

    mutating func encodeNil() throws { append(NodeRef(.leaf(.null))) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        append(try encoder.box(value, at: codingPath + [IndexKey(count)]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<
        NestedKey
    > {
        let path = codingPath + [IndexKey(count)]
        let child = NodeRef(.object([:]))
        append(child)
        return KeyedEncodingContainer(
            NodeKeyedEncodingContainer<NestedKey>(encoder: encoder, ref: child, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = codingPath + [IndexKey(count)]
        let child = NodeRef(.array([]))
        append(child)
        return NodeUnkeyedEncodingContainer(encoder: encoder, ref: child, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let path = codingPath + [IndexKey(count)]
        let child = NodeRef()
        append(child)
        return NodeEncoder(ref: child, codingPath: path, userInfo: encoder.userInfo)
    }
}
