// NodeUnkeyedDecodingContainer: an unkeyed container reading a list field or a nested array.

/// Reads the elements of a list or array node in order.
struct NodeUnkeyedDecodingContainer: UnkeyedDecodingContainer {
    let decoder: NodeDecoder
    let items: [CodableNode]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(decoder: NodeDecoder, items: [CodableNode], codingPath: [any CodingKey]) {
        self.decoder = decoder
        self.items = items
        self.codingPath = codingPath
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    /// The next element and its path, advancing past it.
    mutating func next(_ type: Any.Type) throws(RecordCodingError) -> (CodableNode, [any CodingKey]) {
        let path = codingPath + [IndexKey(currentIndex)]
        guard currentIndex < items.count else {
            throw RecordCodingError(
                .valueNotFound, path: RecordCodingError.format(path), swiftType: "\(type)",
                "the list has \(items.count) elements; \(type) was asked for another")
        }
        let n = items[currentIndex]
        currentIndex += 1
        return (n, path)
    }

    mutating func decodeNil() throws -> Bool {
        guard currentIndex < items.count, items[currentIndex].isNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (n, path) = try next(T.self)
        return try decoder.unbox(n, as: T.self, at: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<
        NestedKey
    > {
        let (n, path) = try next(KeyedDecodingContainer<NestedKey>.self)
        return try NodeDecoder(node: n, codingPath: path, userInfo: decoder.userInfo).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (n, path) = try next((any UnkeyedDecodingContainer).self)
        return try NodeDecoder(node: n, codingPath: path, userInfo: decoder.userInfo).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (n, path) = try next((any Decoder).self)
        return NodeDecoder(node: n, codingPath: path, userInfo: decoder.userInfo)
    }
}
