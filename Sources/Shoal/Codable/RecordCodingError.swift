// RecordCodingError: why a value could not be encoded into a record's fields, or decoded from them.

/// The error ``RecordEncoder`` and ``RecordDecoder`` throw, naming the field path that failed.
///
/// ``path`` joins the coding path with dots, and list or array positions in brackets:
/// `address.street`, `tags[2]`, `contacts[0].name`. The first component is the record field.
/// ``Code`` is an extensible struct, so new codes never break existing `switch` statements.
public struct RecordCodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. Compare with the static members, e.g. `.typeMismatch`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The stable, snake_case name of the code.
        public let name: String

        /// Creates a code with a stable name.
        package init(_ name: String) { self.name = name }

        /// The field (or nested value) holds a different type than the Swift property expects.
        public static let typeMismatch = Code("type_mismatch")
        /// A number does not fit the Swift type (decoding `300` into `Int8`), or a Swift integer
        /// does not fit a field's `int64` (encoding a `UInt64` above `Int64.max`).
        public static let valueOutOfRange = Code("value_out_of_range")
        /// A non-optional property has no field (or a nested value lacks the key).
        public static let keyNotFound = Code("key_not_found")
        /// A value is null, or a list or array has fewer elements than the type reads.
        public static let valueNotFound = Code("value_not_found")
        /// A property's name is not a valid Shoal field name: an ASCII letter, then letters,
        /// digits or `_`, at most `WireLimits.maxFieldNameBytes` bytes.
        public static let invalidFieldName = Code("invalid_field_name")
        /// The record would break a limit: too many fields, a list too long, too many bytes.
        public static let limitExceeded = Code("limit_exceeded")
        /// A nested value's JSON text is malformed (a string field edited by other means).
        public static let invalidNestedValue = Code("invalid_nested_value")
        /// The type's own decoding rejected the value (an unknown raw value of an enum, say).
        public static let dataCorrupted = Code("data_corrupted")
        /// The value cannot be a record: its top level is not keyed (a struct or class), or its
        /// own encoding refused a value.
        public static let unsupportedValue = Code("unsupported_value")
        /// The record type or record ID the fields were encoded into breaks the record rules.
        public static let invalidRecord = Code("invalid_record")

        /// The code's stable name.
        public var description: String { name }
    }

    /// What went wrong.
    public let code: Code
    /// The coding path, e.g. `address.street` or `tags[2]`; empty for the whole record.
    public let path: String
    /// The Swift type being encoded or decoded there, e.g. `Int8`; nil when not known.
    public let swiftType: String?
    /// The type found in the record there, e.g. `int64`, `list of string`, `object`; nil when
    /// nothing was found or it does not apply.
    public let fieldType: String?
    /// What was expected and how to fix it.
    public let detail: String

    /// Creates an error; the coders use the factories below.
    package init(_ code: Code, path: String, swiftType: String? = nil, fieldType: String? = nil, _ detail: String) {
        self.code = code
        self.path = path
        self.swiftType = swiftType
        self.fieldType = fieldType
        self.detail = detail
    }

    /// The code, the path when there is one, and the detail: `type_mismatch at count: …`.
    public var description: String {
        var s = code.name
        if !path.isEmpty { s += " at \(path)" }
        return s + ": " + detail
    }
}

extension RecordCodingError {
    /// `path` as text: keys joined with dots, array positions in brackets.
    static func format(_ path: [any CodingKey]) -> String {
        var s = ""
        for key in path {
            if let index = key as? IndexKey {
                s += "[\(index.index)]"
            } else {
                if !s.isEmpty { s += "." }
                s += key.stringValue
            }
        }
        return s
    }

    static func typeMismatch(_ path: [any CodingKey], _ type: Any.Type, found node: CodableNode) -> RecordCodingError {
        RecordCodingError(
            .typeMismatch, path: format(path), swiftType: "\(type)", fieldType: node.typeName,
            "expected a value for \(type), found \(node.typeName)")
    }

    static func outOfRange(_ path: [any CodingKey], _ type: Any.Type, found: String, _ value: String)
        -> RecordCodingError
    {
        RecordCodingError(
            .valueOutOfRange, path: format(path), swiftType: "\(type)", fieldType: found,
            "\(value) does not fit \(type)")
    }

    /// The same problem as a `DecodingError` thrown by a type's own `init(from:)`.
    init(_ error: DecodingError) {
        switch error {
        case .typeMismatch(let type, let c):
            self.init(.typeMismatch, path: Self.format(c.codingPath), swiftType: "\(type)", c.debugDescription)
        case .valueNotFound(let type, let c):
            self.init(.valueNotFound, path: Self.format(c.codingPath), swiftType: "\(type)", c.debugDescription)
        case .keyNotFound(let key, let c):
            self.init(
                .keyNotFound, path: Self.format(c.codingPath + [key]),
                "no value for \(key.stringValue): \(c.debugDescription)")
        case .dataCorrupted(let c):
            self.init(.dataCorrupted, path: Self.format(c.codingPath), c.debugDescription)
        @unknown default:
            self.init(.dataCorrupted, path: "", "\(error)")
        }
    }

    /// The same problem as an `EncodingError` thrown by a type's own `encode(to:)`.
    init(_ error: EncodingError) {
        switch error {
        case .invalidValue(let value, let c):
            self.init(
                .unsupportedValue, path: Self.format(c.codingPath), swiftType: "\(type(of: value))", c.debugDescription)
        @unknown default:
            self.init(.unsupportedValue, path: "", "\(error)")
        }
    }
}
