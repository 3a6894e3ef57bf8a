// NodeKeyedEncodingContainer: a keyed container writing a CodableNode object.

import ShoalWire

/// Writes the entries of an object node.
///
/// At the top level (the record's fields) a nil optional is written as an explicit null, so
/// that encoding into an existing record removes the field; in nested values it is left out.
struct NodeKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: NodeEncoder
    let ref: NodeRef
    let codingPath: [any CodingKey]

    var isTopLevel: Bool { codingPath.isEmpty }

    func set(_ child: NodeRef, for key: Key) {
        guard case .object(var entries) = ref.content else { return }
        ref.content = .empty
        entries[key.stringValue] = child
        ref.content = .object(entries)
    }

    mutating func encodeNil(forKey key: Key) throws {
        set(NodeRef(.leaf(.null)), for: key)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        set(try encoder.box(value, at: codingPath + [key]), for: key)
    }

    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else if isTopLevel { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try encodeIfPresent(value as Bool?, key) }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws {
        try encodeIfPresent(value as String?, key)
    }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws {
        try encodeIfPresent(value as Double?, key)
    }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { try encodeIfPresent(value as Float?, key) }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try encodeIfPresent(value as Int?, key) }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { try encodeIfPresent(value as Int8?, key) }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { try encodeIfPresent(value as Int16?, key) }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { try encodeIfPresent(value as Int32?, key) }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try encodeIfPresent(value as Int64?, key) }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { try encodeIfPresent(value as UInt?, key) }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { try encodeIfPresent(value as UInt8?, key) }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws {
        try encodeIfPresent(value as UInt16?, key)
    }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws {
        try encodeIfPresent(value as UInt32?, key)
    }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws {
        try encodeIfPresent(value as UInt64?, key)
    }
    @available(macOS 15, *)
    mutating func encodeIfPresent(_ value: Int128?, forKey key: Key) throws {
        try encodeIfPresent(value as Int128?, key)
    }
    @available(macOS 15, *)
    mutating func encodeIfPresent(_ value: UInt128?, forKey key: Key) throws {
        try encodeIfPresent(value as UInt128?, key)
    }

    /// The generic ``encodeIfPresent(_:forKey:)`` for the primitive overloads.
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, _ key: Key) throws {
        if let value { try encode(value, forKey: key) } else if isTopLevel { try encodeNil(forKey: key) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let child = NodeRef(.object([:]))
        set(child, for: key)
        return KeyedEncodingContainer(
            NodeKeyedEncodingContainer<NestedKey>(encoder: encoder, ref: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = NodeRef(.array([]))
        set(child, for: key)
        return NodeUnkeyedEncodingContainer(encoder: encoder, ref: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        let child = NodeRef()
        if case .object(var entries) = ref.content {
            ref.content = .empty
            entries[SuperKey().stringValue] = child
            ref.content = .object(entries)
        }
        return NodeEncoder(ref: child, codingPath: codingPath + [SuperKey()], userInfo: encoder.userInfo)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let child = NodeRef()
        set(child, for: key)
        return NodeEncoder(ref: child, codingPath: codingPath + [key], userInfo: encoder.userInfo)
    }
}
