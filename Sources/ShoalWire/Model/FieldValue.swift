// FieldValue: the typed value of one record field — scalars, references, assets, locations, lists.

/// The value of a record field.
///
/// Equality is by canonical encoding: doubles compare by bit pattern after every NaN is made the
/// one canonical NaN, so `NaN == NaN` and `-0.0 != +0.0` (they encode differently); strings
/// compare by their UTF-8 bytes, so canonically equivalent but differently encoded text is
/// unequal. Two values are equal exactly when they encode to the same bytes.
public enum FieldValue: Hashable, Sendable {
    /// UTF-8 text.
    case string(String)
    /// A signed 64-bit integer.
    case int64(Int64)
    /// A 64-bit IEEE 754 number.
    case double(Double)
    /// True or false.
    case bool(Bool)
    /// Raw bytes.
    case bytes([UInt8])
    /// A point in time, millisecond precision.
    case date(Timestamp)
    /// A link to another record.
    case reference(Reference)
    /// A content-addressed blob.
    case asset(Asset)
    /// A geographic position.
    indirect case location(Location)
    /// A homogeneous list of one of the above.
    case list(ListValue)

    /// The value's type, as named in the Spec and the CLI.
    public var kind: Kind {
        switch self {
        case .string: return .string
        case .int64: return .int64
        case .double: return .double
        case .bool: return .bool
        case .bytes: return .bytes
        case .date: return .date
        case .reference: return .reference
        case .asset: return .asset
        case .location: return .location
        case .list(let l): return l.elementKind
        }
    }

    /// Whether this is a list value.
    public var isList: Bool {
        if case .list = self { return true }
        return false
    }

    /// The scalar types; a list is a list of one of them.
    public enum Kind: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        case string = 1, int64, double, bool, bytes, date, reference, asset, location

        public var description: String {
            switch self {
            case .string: return "string"
            case .int64: return "int64"
            case .double: return "double"
            case .bool: return "bool"
            case .bytes: return "bytes"
            case .date: return "date"
            case .reference: return "reference"
            case .asset: return "asset"
            case .location: return "location"
            }
        }
    }

    public static func == (a: FieldValue, b: FieldValue) -> Bool {
        switch (a, b) {
        case let (.string(x), .string(y)): return UTF8Order.equal(x, y)
        case let (.int64(x), .int64(y)): return x == y
        case let (.double(x), .double(y)): return CanonicalDouble.same(x, y)
        case let (.bool(x), .bool(y)): return x == y
        case let (.bytes(x), .bytes(y)): return x == y
        case let (.date(x), .date(y)): return x == y
        case let (.reference(x), .reference(y)): return x == y
        case let (.asset(x), .asset(y)): return x == y
        case let (.location(x), .location(y)): return x == y
        case let (.list(x), .list(y)): return x == y
        default: return false
        }
    }

    public func hash(into h: inout Hasher) {
        switch self {
        case .string(let v): h.combine(1 as UInt8); UTF8Order.hash(v, into: &h)
        case .int64(let v): h.combine(2 as UInt8); h.combine(v)
        case .double(let v): h.combine(3 as UInt8); h.combine(CanonicalDouble.bits(v))
        case .bool(let v): h.combine(4 as UInt8); h.combine(v)
        case .bytes(let v): h.combine(5 as UInt8); h.combine(v)
        case .date(let v): h.combine(6 as UInt8); h.combine(v)
        case .reference(let v): h.combine(7 as UInt8); h.combine(v)
        case .asset(let v): h.combine(8 as UInt8); h.combine(v)
        case .location(let v): h.combine(9 as UInt8); h.combine(v)
        case .list(let v): h.combine(0x40 as UInt8); h.combine(v)
        }
    }
}

/// A homogeneous list field value.
public enum ListValue: Hashable, Sendable {
    case string([String])
    case int64([Int64])
    case double([Double])
    case bool([Bool])
    case bytes([[UInt8]])
    case date([Timestamp])
    case reference([Reference])
    case asset([Asset])
    case location([Location])

    /// The type of the elements.
    public var elementKind: FieldValue.Kind {
        switch self {
        case .string: return .string
        case .int64: return .int64
        case .double: return .double
        case .bool: return .bool
        case .bytes: return .bytes
        case .date: return .date
        case .reference: return .reference
        case .asset: return .asset
        case .location: return .location
        }
    }

    /// The number of elements.
    public var count: Int {
        switch self {
        case .string(let v): return v.count
        case .int64(let v): return v.count
        case .double(let v): return v.count
        case .bool(let v): return v.count
        case .bytes(let v): return v.count
        case .date(let v): return v.count
        case .reference(let v): return v.count
        case .asset(let v): return v.count
        case .location(let v): return v.count
        }
    }

    /// The elements as scalar field values.
    public var elements: [FieldValue] {
        switch self {
        case .string(let v): return v.map(FieldValue.string)
        case .int64(let v): return v.map(FieldValue.int64)
        case .double(let v): return v.map(FieldValue.double)
        case .bool(let v): return v.map(FieldValue.bool)
        case .bytes(let v): return v.map(FieldValue.bytes)
        case .date(let v): return v.map(FieldValue.date)
        case .reference(let v): return v.map(FieldValue.reference)
        case .asset(let v): return v.map(FieldValue.asset)
        case .location(let v): return v.map(FieldValue.location)
        }
    }

    /// Builds a list from scalar values of one kind; nil if kinds differ or a value is a list.
    /// An empty `values` needs `kind` to say what the list holds.
    public init?(_ values: [FieldValue], kind: FieldValue.Kind? = nil) {
        guard let k = kind ?? values.first?.kind else { return nil }
        func all<T>(_ f: (FieldValue) -> T?) -> [T]? {
            var out = [T]()
            out.reserveCapacity(values.count)
            for v in values {
                guard let x = f(v) else { return nil }
                out.append(x)
            }
            return out
        }
        switch k {
        case .string:
            guard let a = all({ if case .string(let x) = $0 { x } else { nil } }) else { return nil }; self = .string(a)
        case .int64:
            guard let a = all({ if case .int64(let x) = $0 { x } else { nil } }) else { return nil }; self = .int64(a)
        case .double:
            guard let a = all({ if case .double(let x) = $0 { x } else { nil } }) else { return nil }; self = .double(a)
        case .bool:
            guard let a = all({ if case .bool(let x) = $0 { x } else { nil } }) else { return nil }; self = .bool(a)
        case .bytes:
            guard let a = all({ if case .bytes(let x) = $0 { x } else { nil } }) else { return nil }; self = .bytes(a)
        case .date:
            guard let a = all({ if case .date(let x) = $0 { x } else { nil } }) else { return nil }; self = .date(a)
        case .reference:
            guard let a = all({ if case .reference(let x) = $0 { x } else { nil } }) else { return nil };
            self = .reference(a)
        case .asset:
            guard let a = all({ if case .asset(let x) = $0 { x } else { nil } }) else { return nil }; self = .asset(a)
        case .location:
            guard let a = all({ if case .location(let x) = $0 { x } else { nil } }) else { return nil };
            self = .location(a)
        }
    }

    public static func == (a: ListValue, b: ListValue) -> Bool {
        switch (a, b) {
        case let (.string(x), .string(y)): return x.count == y.count && zip(x, y).allSatisfy { UTF8Order.equal($0, $1) }
        case let (.int64(x), .int64(y)): return x == y
        case let (.double(x), .double(y)):
            return x.count == y.count && zip(x, y).allSatisfy { CanonicalDouble.same($0, $1) }
        case let (.bool(x), .bool(y)): return x == y
        case let (.bytes(x), .bytes(y)): return x == y
        case let (.date(x), .date(y)): return x == y
        case let (.reference(x), .reference(y)): return x == y
        case let (.asset(x), .asset(y)): return x == y
        case let (.location(x), .location(y)): return x == y
        default: return false
        }
    }

    public func hash(into h: inout Hasher) {
        h.combine(elementKind.rawValue)
        switch self {
        case .double(let v): for d in v { h.combine(CanonicalDouble.bits(d)) }
        case .string(let v): h.combine(v.count); for s in v { UTF8Order.hash(s, into: &h) }
        case .int64(let v): h.combine(v)
        case .bool(let v): h.combine(v)
        case .bytes(let v): h.combine(v)
        case .date(let v): h.combine(v)
        case .reference(let v): h.combine(v)
        case .asset(let v): h.combine(v)
        case .location(let v): h.combine(v)
        }
    }
}
