// NodeDecoder: the Decoder that reads a value from a CodableNode, parsing nested JSON on demand.

import ShoalWire

/// Decodes one value from ``node``; it is also the value's single-value container.
///
/// A type that asks for a keyed or unkeyed container where the node is a string (a nested
/// value's field) gets the string parsed as nested JSON (``NestedJSON``).
final class NodeDecoder: Decoder, SingleValueDecodingContainer {
    let node: CodableNode
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]

    init(node: CodableNode, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any]) {
        self.node = node
        self.codingPath = codingPath
        self.userInfo = userInfo
    }

    /// The `T` that `node` holds, at `path`.
    /// - Throws: ``RecordCodingError``, or whatever `T`'s `init(from:)` throws.
    func unbox<T: Decodable>(_ node: CodableNode, as type: T.Type, at path: [any CodingKey]) throws -> T {
        if let scalarType = T.self as? any FieldScalar.Type {
            if node.isNull {
                throw RecordCodingError(
                    .valueNotFound, path: RecordCodingError.format(path), swiftType: "\(T.self)", fieldType: "null",
                    "expected a value for \(T.self), found null")
            }
            if let value = try scalarType.decodeScalar(node, at: path) {
                guard let typed = value as? T else {
                    throw RecordCodingError(
                        .typeMismatch, path: RecordCodingError.format(path), swiftType: "\(T.self)",
                        fieldType: node.typeName,
                        "expected a value for \(T.self), found \(node.typeName)")
                }
                return typed
            }
        }
        return try T(from: NodeDecoder(node: node, codingPath: path, userInfo: userInfo))
    }

    /// The node with a string parsed as nested JSON when a container is asked of it.
    /// - Throws: ``RecordCodingError`` `invalidNestedValue` for malformed JSON.
    func structured(_ node: CodableNode) throws(RecordCodingError) -> CodableNode {
        guard case .scalar(.string(let text)) = node else { return node }
        do throws(NestedJSON.ParseError) {
            return try NestedJSON.parse(text)
        } catch {
            throw RecordCodingError(
                .invalidNestedValue, path: RecordCodingError.format(codingPath), fieldType: "string",
                "a nested value is JSON text; this string is not: \(error.message) at byte \(error.offset)")
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let n = try structured(node)
        guard case .object(let entries) = n else {
            throw RecordCodingError(
                .typeMismatch, path: RecordCodingError.format(codingPath), fieldType: n.typeName,
                "expected a nested object (keyed container), found \(n.typeName)")
        }
        return KeyedDecodingContainer(
            NodeKeyedDecodingContainer<Key>(decoder: self, entries: entries, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let n = try structured(node)
        switch n {
        case .array(let items): return NodeUnkeyedDecodingContainer(decoder: self, items: items, codingPath: codingPath)
        case .list(let list):
            return NodeUnkeyedDecodingContainer(
                decoder: self, items: list.elements.map(CodableNode.scalar), codingPath: codingPath)
        default:
            throw RecordCodingError(
                .typeMismatch, path: RecordCodingError.format(codingPath), fieldType: n.typeName,
                "expected a list or nested array (unkeyed container), found \(n.typeName)")
        }
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { node.isNull }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try unbox(node, as: T.self, at: codingPath)
    }
}
