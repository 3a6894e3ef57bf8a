// RecordEncoder: stores a Codable value's properties as a record's fields.

public import ShoalWire

/// Encodes a `Codable` value as the fields of a `Record`: one field per top-level property.
///
/// ```swift
/// struct Note: Codable {
///     var title: String
///     var tags: [String]
///     var due: Date?
///     var author: Reference
///     var address: Address        // a nested struct
/// }
/// let record = try RecordEncoder().encode(note, type: "Note", id: Record.ID(name: "n1", zone: notes))
/// ```
///
/// Each property becomes the field of its name (which must be a valid field name: an ASCII
/// letter, then letters, digits or `_`). Property types map onto field types:
///
/// | Swift | field |
/// |---|---|
/// | `Int`, `Int8`…`Int64`, `UInt`…`UInt64`, `Int128`, `UInt128` | `int64`, range-checked |
/// | `Double`, `Float` | `double` |
/// | `Bool` | `bool` |
/// | `String`, `URL` (absolute string) | `string` |
/// | `Date` (rounded down to the millisecond), `Timestamp` | `date` |
/// | `Data` | `bytes` |
/// | `Reference`, `Asset`, `Location` | themselves |
/// | an array of any of the above | a list of that type, also when empty |
/// | an `Optional` | the wrapped type's field; no field when nil |
/// | a type that encodes one value (an enum with a raw value, a wrapper) | that value's field |
/// | any other value (nested structs, enums without raw values, dictionaries, arrays of structs) | a `string` field holding canonical JSON |
///
/// Any other array whose elements each encode to one field value of one type (an array of
/// raw-value enums, a `Set<String>`) is a list too when it has elements, and the JSON text `[]`
/// when empty. A `Set`, and a dictionary whose keys are neither strings nor integers, encode in
/// their iteration order, which Swift does not fix: equal sets may give different records.
///
/// Nested values are stored as canonical JSON text (keys sorted by UTF-8 bytes, no whitespace,
/// nil optionals left out; dates as integer milliseconds, bytes as base64) rather than flattened
/// into several fields: field names cannot contain a separator that would keep `address.street`
/// apart from a property called `address_street`, arrays of structs have no flat form, and one
/// field per nested value keeps its parts together. The text is deterministic, so equal values
/// give equal records on every node. Replication merges field by field, so concurrent edits to
/// two parts of one nested value resolve as one edit of that field; make parts that are edited
/// independently top-level properties.
public struct RecordEncoder: Sendable {
    /// The limits the encoded record must fit (field names, field count, list length, size).
    public var limits: WireLimits
    /// Values the encoded types can read through `Encoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable]

    /// Creates an encoder checking `limits`.
    public init(limits: WireLimits = .default, userInfo: [CodingUserInfoKey: any Sendable] = [:]) {
        self.limits = limits
        self.userInfo = userInfo
    }

    /// A new, unsaved record of type `recordType` with ID `id` whose fields are `value`'s
    /// properties.
    /// - Throws: ``RecordCodingError`` naming the property at fault: `invalidFieldName`,
    ///   `valueOutOfRange`, `limitExceeded`, `unsupportedValue` (a value whose top level is not
    ///   keyed), `invalidRecord` (a bad record type or ID); errors `value` throws itself pass
    ///   through, except `EncodingError`, which becomes `unsupportedValue`.
    public func encode<T: Encodable>(_ value: T, type recordType: String, id: Record.ID) throws -> Record {
        var record = Record(recordType: recordType, id: id)
        try encode(value, into: &record)
        return record
    }

    /// Writes `value`'s properties into the fields of `record`, keeping its system fields.
    ///
    /// Only fields whose value changes are set, and a nil optional removes its field, so
    /// `Record.changedKeys` names exactly what changed and a save merges with concurrent edits
    /// of other fields. Fields that are not properties of `T` stay as they are. On error,
    /// `record` is left unchanged.
    /// - Throws: as ``encode(_:type:id:)``.
    public func encode<T: Encodable>(_ value: T, into record: inout Record) throws {
        let encoder = NodeEncoder(codingPath: [], userInfo: userInfo)
        do {
            try value.encode(to: encoder)
        } catch let error as EncodingError {
            throw RecordCodingError(error)
        }
        guard case .object(let entries) = encoder.ref.node else {
            throw RecordCodingError(
                .unsupportedValue, path: "", swiftType: "\(T.self)", fieldType: encoder.ref.node.typeName,
                "a record is encoded from a value with properties (a keyed container), not from \(encoder.ref.node.typeName)"
            )
        }
        var updated = record
        for name in entries.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            guard let node = entries[name] else { continue }
            guard Identifier.isValid(name), name.utf8.count <= limits.maxFieldNameBytes else {
                throw RecordCodingError(
                    .invalidFieldName, path: name, swiftType: "\(T.self)",
                    "\(name.debugDescription) is not a field name: it must start with an ASCII letter, contain only letters, digits and _, and be at most \(limits.maxFieldNameBytes) bytes; rename the property or give it a CodingKey"
                )
            }
            let field = try fieldValue(of: node, name: name)
            if updated[name] != field { updated[name] = field }
        }
        do throws(WireError) {
            try updated.validate(limits: limits)
        } catch {
            throw RecordCodingError(
                error.code == .limitExceeded ? .limitExceeded : .invalidRecord, path: "", swiftType: "\(T.self)",
                error.detail)
        }
        record = updated
    }

    /// The field `node` is stored as; nil for no field.
    func fieldValue(of node: CodableNode, name: String) throws -> FieldValue? {
        switch node {
        case .null: return nil
        case .scalar(let v): return v
        case .list(let l):
            try checkCount(l.count, name: name)
            return .list(l)
        case .array(let items):
            var scalars = [FieldValue]()
            for item in items {
                guard case .scalar(let v) = item else { break }
                scalars.append(v)
            }
            if !items.isEmpty, scalars.count == items.count, let list = ListValue(scalars) {
                try checkCount(list.count, name: name)
                return .list(list)
            }
            return .string(try NestedJSON.text(of: node, field: name))
        case .object:
            return .string(try NestedJSON.text(of: node, field: name))
        }
    }

    func checkCount(_ count: Int, name: String) throws(RecordCodingError) {
        guard count <= limits.maxListCount else {
            throw RecordCodingError(
                .limitExceeded, path: name, fieldType: "list",
                "\(count) elements, over the limit of \(limits.maxListCount) (WireLimits.maxListCount)")
        }
    }
}
