// RecordDecoder: builds a Codable value from a record's fields.

public import ShoalWire

/// Decodes a `Codable` value from the fields of a `Record`, the inverse of ``RecordEncoder``.
///
/// ```swift
/// let note = try RecordDecoder().decode(Note.self, from: record)
/// ```
///
/// Each property reads the field of its name. A missing field is nil for an `Optional`
/// property and `keyNotFound` otherwise; a field of another type is `typeMismatch`; a number
/// that does not fit the property's type (300 into an `Int8`, 1e300 into a `Float`) is
/// `valueOutOfRange`. A nested value's field is parsed as JSON (see ``RecordEncoder``); an
/// `Int` property also accepts nothing but an `int64` field, while a `Double` property accepts
/// an `int64` that converts exactly. Any record, however malformed for `T`, gives a value or an
/// error: the decoder never traps.
public struct RecordDecoder: Sendable {
    /// Values the decoded types can read through `Decoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable]

    /// Creates a decoder.
    public init(userInfo: [CodingUserInfoKey: any Sendable] = [:]) {
        self.userInfo = userInfo
    }

    /// The `T` whose properties are `record`'s fields. System fields are not read.
    /// - Throws: ``RecordCodingError`` naming the field path at fault (`keyNotFound`,
    ///   `typeMismatch`, `valueOutOfRange`, `valueNotFound`, `invalidNestedValue`,
    ///   `dataCorrupted` for a value `T` rejects, such as an unknown raw value). Errors `T`'s
    ///   `init(from:)` throws itself pass through, except `DecodingError`, which becomes the
    ///   matching ``RecordCodingError``.
    public func decode<T: Decodable>(_ type: T.Type, from record: Record) throws -> T {
        var entries = [String: CodableNode]()
        // A field's value is the first of its slots (concurrent slots after a merge).
        for f in record.withoutConcurrentSlots.fields {
            switch f.value {
            case .list(let l)?: entries[f.name] = .list(l)
            case let v?: entries[f.name] = .scalar(v)
            case nil: break
            }
        }
        let decoder = NodeDecoder(node: .object(entries), codingPath: [], userInfo: userInfo)
        do {
            return try T(from: decoder)
        } catch let error as DecodingError {
            throw RecordCodingError(error)
        }
    }
}
