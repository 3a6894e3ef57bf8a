// NodeEncoder: the Encoder that turns a value's encode(to:) into a CodableNode tree.

import ShoalWire

/// Encodes one value into ``ref``; it is also the value's single-value container.
///
/// Every value passes through ``box(_:at:)``: field scalars (``FieldScalar``) become field
/// values and arrays of them lists, whatever their own `encode(to:)` would do; anything else
/// encodes itself into a fresh `NodeEncoder`.
final class NodeEncoder: Encoder, SingleValueEncodingContainer {
    let ref: NodeRef
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]

    init(ref: NodeRef = NodeRef(), codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any]) {
        self.ref = ref
        self.codingPath = codingPath
        self.userInfo = userInfo
    }

    /// The node `value` encodes to, at `path`.
    /// - Throws: ``RecordCodingError`` for a value out of range, or whatever the value throws.
    func box<T: Encodable>(_ value: T, at path: [any CodingKey]) throws -> NodeRef {
        if let scalar = value as? any FieldScalar {
            return NodeRef(.leaf(.scalar(try scalar.fieldValue(at: path))))
        }
        if let array = value as? any FieldScalarArray {
            return NodeRef(.leaf(.list(try array.listValue(at: path))))
        }
        let child = NodeEncoder(codingPath: path, userInfo: userInfo)
        try value.encode(to: child)
        return child.ref
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .object = ref.content {} else { ref.content = .object([:]) }
        return KeyedEncodingContainer(NodeKeyedEncodingContainer<Key>(encoder: self, ref: ref, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = ref.content {} else { ref.content = .array([]) }
        return NodeUnkeyedEncodingContainer(encoder: self, ref: ref, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    func encodeNil() throws { ref.content = .leaf(.null) }

    func encode<T: Encodable>(_ value: T) throws {
        ref.content = try box(value, at: codingPath).content
    }
}
