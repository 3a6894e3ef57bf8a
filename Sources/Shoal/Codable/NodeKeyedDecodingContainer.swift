// NodeKeyedDecodingContainer: a keyed container reading a CodableNode object (or the record's fields).

/// Reads the entries of an object node; at the top level, the record's fields by name.
struct NodeKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: NodeDecoder
    let entries: [String: CodableNode]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { entries.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { entries[key.stringValue] != nil }

    func entry(_ key: Key) throws(RecordCodingError) -> CodableNode {
        guard let n = entries[key.stringValue] else {
            let path = RecordCodingError.format(codingPath + [key])
            throw RecordCodingError(
                .keyNotFound, path: path,
                codingPath.isEmpty
                    ? "the record has no field \(key.stringValue)" : "the nested value has no key \(key.stringValue)")
        }
        return n
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        entries[key.stringValue]?.isNull ?? true
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder.unbox(try entry(key), as: T.self, at: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try NodeDecoder(node: try entry(key), codingPath: codingPath + [key], userInfo: decoder.userInfo).container(
            keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try NodeDecoder(node: try entry(key), codingPath: codingPath + [key], userInfo: decoder.userInfo)
            .unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        NodeDecoder(
            node: entries[SuperKey().stringValue] ?? .null, codingPath: codingPath + [SuperKey()],
            userInfo: decoder.userInfo)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        NodeDecoder(node: entries[key.stringValue] ?? .null, codingPath: codingPath + [key], userInfo: decoder.userInfo)
    }
}
