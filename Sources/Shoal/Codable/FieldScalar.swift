// FieldScalar: the Swift types that map straight onto one field value, and how.

import ShoalWire
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A Swift type stored as one field value of a fixed kind rather than through its own
/// `Codable` conformance: integers as `int64`, floating point as `double`, `Bool`, `String`,
/// `Date` and ``Timestamp`` as `date`, `Data` as `bytes`, `URL` as `string`, and ``Reference``,
/// ``Asset`` and ``Location`` as themselves.
protocol FieldScalar {
    /// The field kind the type is stored as (and the element kind of its arrays).
    static var fieldKind: FieldValue.Kind { get }
    /// The field value for `self`.
    /// - Throws: ``RecordCodingError`` `valueOutOfRange` when it does not fit the field kind.
    func fieldValue(at path: [any CodingKey]) throws(RecordCodingError) -> FieldValue
    /// The value `node` holds, or nil when the type's own `init(from:)` should read it (a
    /// nested object holding a reference, say).
    /// - Throws: ``RecordCodingError`` `typeMismatch` or `valueOutOfRange`.
    static func decodeScalar(_ node: CodableNode, at path: [any CodingKey]) throws(RecordCodingError) -> Self?
}

/// Integers: `int64` fields, range-checked both ways.
protocol IntegerFieldScalar: FieldScalar, FixedWidthInteger {}

extension IntegerFieldScalar {
    static var fieldKind: FieldValue.Kind { .int64 }

    func fieldValue(at path: [any CodingKey]) throws(RecordCodingError) -> FieldValue {
        guard let v = Int64(exactly: self) else {
            throw RecordCodingError(
                .valueOutOfRange, path: RecordCodingError.format(path), swiftType: "\(Self.self)", fieldType: "int64",
                "\(self) does not fit an int64 field (−2^63…2^63−1)")
        }
        return .int64(v)
    }

    static func decodeScalar(_ node: CodableNode, at path: [any CodingKey]) throws(RecordCodingError) -> Self? {
        guard case .scalar(.int64(let v)) = node else { throw .typeMismatch(path, Self.self, found: node) }
        guard let x = Self(exactly: v) else { throw .outOfRange(path, Self.self, found: "int64", "\(v)") }
        return x
    }
}

extension Int: IntegerFieldScalar {}
extension Int8: IntegerFieldScalar {}
extension Int16: IntegerFieldScalar {}
extension Int32: IntegerFieldScalar {}
extension Int64: IntegerFieldScalar {}
extension UInt: IntegerFieldScalar {}
extension UInt8: IntegerFieldScalar {}
extension UInt16: IntegerFieldScalar {}
extension UInt32: IntegerFieldScalar {}
extension UInt64: IntegerFieldScalar {}
@available(macOS 15, *) extension Int128: IntegerFieldScalar {}
@available(macOS 15, *) extension UInt128: IntegerFieldScalar {}

extension Double: FieldScalar {
    static var fieldKind: FieldValue.Kind { .double }
    func fieldValue(at path: [any CodingKey]) throws(RecordCodingError) -> FieldValue { .double(self) }

    /// A `double`, an `int64` that converts exactly, or (in nested JSON) `NaN`/`Infinity`/`-Infinity`.
    static func decodeScalar(_ node: CodableNode, at path: [any CodingKey]) throws(RecordCodingError) -> Double? {
        switch node {
        case .scalar(.double(let d)): return d
        case .scalar(.int64(let i)):
            guard let d = Double(exactly: i) else { throw .outOfRange(path, Double.self, found: "int64", "\(i)") }
            return d
        case .scalar(.string(let s)):
            guard let d = NonFiniteText.value(s) else { throw .typeMismatch(path, Double.self, found: node) }
            return d
        default: throw .typeMismatch(path, Double.self, found: node)
        }
    }
}

extension Float: FieldScalar {
    static var fieldKind: FieldValue.Kind { .double }
    func fieldValue(at path: [any CodingKey]) throws(RecordCodingError) -> FieldValue { .double(Double(self)) }

    /// A double within `Float`'s range (rounded to the nearest `Float`), infinities and NaN.
    static func decodeScalar(_ node: CodableNode, at path: [any CodingKey]) throws(RecordCodingError) -> Float? {
        guard let d = try Double.decodeScalar(node, at: path) else { return nil }
        guard !d.isFinite || abs(d) <= Double(Float.greatestFiniteMagnitude) else {
            throw .outOfRange(path, Float.self, found: "double", "\(d)")
        }
        return Float(d)
    }
}

extension Bool: FieldScalar {
    static var fieldKind: FieldValue.Kind { .bool }
    func fieldValue(at path: [any CodingKey]) throws(RecordCodingError) -> FieldValue { .bool(self) }
    static func decodeScalar(_ node: CodableNode, at path: [any CodingKey]) throws(RecordCodingError) -> Bool? {
        guard case .scalar(.bool(let b)) = node else { throw .typeMismatch(path, Bool.self, found: node) }
        return b
    }
}

extension String: FieldScalar {
    static var fieldKind: FieldValue.Kind { .string }
    func fieldValue(at path: [any CodingKey]) throws(RecordCodingError) -> FieldValue { .string(self) }
    static func decodeScalar(_ node: CodableNode, at path: [any CodingKey]) throws(RecordCodingError) -> String? {
        guard case .scalar(.string(let s)) = node else { throw .typeMismatch(path, String.self, found: node) }
        return s
    }
}

extension Timestamp: FieldScalar {
    static var fieldKind: FieldValue.Kind { .date }
    func fieldValue(at path: [any CodingKey]) throws(RecordCodingError) -> FieldValue { .date(self) }

    /// A `date`, or (in nested JSON) an integer of milliseconds since 1970.
    static func decodeScalar(_ node: CodableNode, at path: [any CodingKey]) throws(RecordCodingError) -> Timestamp? {
        switch node {
        case .scalar(.date(let t)): return t
        case .scalar(.int64(let ms)): return Timestamp(millisecondsSince1970: ms)
        default: throw .typeMismatch(path, Timestamp.self, found: node)
        }
    }
}

extension Date: FieldScalar {
    static var fieldKind: FieldValue.Kind { .date }
    /// A `date` field: the date rounded down to the millisecond (``Timestamp/init(_:)``).
    func fieldValue(at path: [any CodingKey]) throws(RecordCodingError) -> FieldValue { .date(Timestamp(self)) }
    static func decodeScalar(_ node: CodableNode, at path: [any CodingKey]) throws(RecordCodingError) -> Date? {
        do throws(RecordCodingError) {
            return try Timestamp.decodeScalar(node, at: path)?.date
        } catch {
            throw .typeMismatch(path, Date.self, found: node)
        }
    }
}

extension Data: FieldScalar {
    static var fieldKind: FieldValue.Kind { .bytes }
    func fieldValue(at path: [any CodingKey]) throws(RecordCodingError) -> FieldValue { .bytes([UInt8](self)) }

    /// `bytes`, or (in nested JSON) a base64 string.
    static func decodeScalar(_ node: CodableNode, at path: [any CodingKey]) throws(RecordCodingError) -> Data? {
        switch node {
        case .scalar(.bytes(let b)): return Data(b)
        case .scalar(.string(let s)):
            guard let d = Data(base64Encoded: s) else {
                throw RecordCodingError(
                    .dataCorrupted, path: RecordCodingError.format(path), swiftType: "Data", fieldType: "string",
                    "nested bytes are a base64 string; this string is not base64")
            }
            return d
        default: throw .typeMismatch(path, Data.self, found: node)
        }
    }
}

extension URL: FieldScalar {
    static var fieldKind: FieldValue.Kind { .string }
    /// A `string` field holding the absolute URL.
    func fieldValue(at path: [any CodingKey]) throws(RecordCodingError) -> FieldValue { .string(absoluteString) }
    static func decodeScalar(_ node: CodableNode, at path: [any CodingKey]) throws(RecordCodingError) -> URL? {
        guard case .scalar(.string(let s)) = node else { throw .typeMismatch(path, URL.self, found: node) }
        guard let url = URL(string: s) else {
            throw RecordCodingError(
                .dataCorrupted, path: RecordCodingError.format(path), swiftType: "URL", fieldType: "string",
                "\(s.debugDescription) is not a URL")
        }
        return url
    }
}

extension Reference: FieldScalar {
    static var fieldKind: FieldValue.Kind { .reference }
    func fieldValue(at path: [any CodingKey]) throws(RecordCodingError) -> FieldValue { .reference(self) }
    static func decodeScalar(_ node: CodableNode, at path: [any CodingKey]) throws(RecordCodingError) -> Reference? {
        switch node {
        case .scalar(.reference(let r)): return r
        case .object: return nil
        default: throw .typeMismatch(path, Reference.self, found: node)
        }
    }
}

extension Asset: FieldScalar {
    static var fieldKind: FieldValue.Kind { .asset }
    func fieldValue(at path: [any CodingKey]) throws(RecordCodingError) -> FieldValue { .asset(self) }
    static func decodeScalar(_ node: CodableNode, at path: [any CodingKey]) throws(RecordCodingError) -> Asset? {
        switch node {
        case .scalar(.asset(let a)): return a
        case .object: return nil
        default: throw .typeMismatch(path, Asset.self, found: node)
        }
    }
}

extension Location: FieldScalar {
    static var fieldKind: FieldValue.Kind { .location }
    func fieldValue(at path: [any CodingKey]) throws(RecordCodingError) -> FieldValue { .location(self) }
    static func decodeScalar(_ node: CodableNode, at path: [any CodingKey]) throws(RecordCodingError) -> Location? {
        switch node {
        case .scalar(.location(let l)): return l
        case .object: return nil
        default: throw .typeMismatch(path, Location.self, found: node)
        }
    }
}
