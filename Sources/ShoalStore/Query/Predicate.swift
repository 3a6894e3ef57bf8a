// Predicate: the conditions a query can put on a record's fields (CloudKit's NSPredicate subset).

public import ShoalWire

/// A condition on a record's fields: CloudKit's predicate subset as a value.
///
/// Build with the static functions: `.equal("done", .bool(false)) && .beginsWith("title", "Sh")`.
/// A comparison holds only when the field exists and has the same type as the operand; list fields
/// are tested with ``contains(_:_:)``.
public indirect enum Predicate: Sendable, Hashable {
    /// Every record (`TRUEPREDICATE`).
    case all
    /// `field <op> value`.
    case compare(String, Comparison, FieldValue)
    /// `field BETWEEN {low, high}`, both ends included.
    case between(String, FieldValue, FieldValue)
    /// `field IN values`.
    case isIn(String, [FieldValue])
    /// `field BEGINSWITH prefix` (string fields).
    case beginsWith(String, String)
    /// `field CONTAINS value`: list membership (a scalar field equal to it counts too).
    case contains(String, FieldValue)
    /// All of the predicates.
    case and([Predicate])
    /// The negation.
    case not(Predicate)

    /// A comparison operator.
    public enum Comparison: UInt8, Sendable, Hashable {
        case equal = 0, notEqual, less, lessOrEqual, greater, greaterOrEqual
    }

    /// `field == value`.
    public static func equal(_ field: String, _ value: FieldValue) -> Predicate { .compare(field, .equal, value) }
    /// `field != value` (also true when the field is missing).
    public static func notEqual(_ field: String, _ value: FieldValue) -> Predicate {
        .not(.compare(field, .equal, value))
    }
    /// `field < value`.
    public static func less(_ field: String, _ value: FieldValue) -> Predicate { .compare(field, .less, value) }
    /// `field <= value`.
    public static func lessOrEqual(_ field: String, _ value: FieldValue) -> Predicate {
        .compare(field, .lessOrEqual, value)
    }
    /// `field > value`.
    public static func greater(_ field: String, _ value: FieldValue) -> Predicate { .compare(field, .greater, value) }
    /// `field >= value`.
    public static func greaterOrEqual(_ field: String, _ value: FieldValue) -> Predicate {
        .compare(field, .greaterOrEqual, value)
    }

    /// Both predicates.
    public static func && (a: Predicate, b: Predicate) -> Predicate { .and([a, b]) }
    /// Negation.
    public static prefix func ! (a: Predicate) -> Predicate { .not(a) }

    /// Whether `record` satisfies the predicate.
    public func evaluate(_ record: Record) -> Bool {
        switch self {
        case .all: return true
        case let .compare(f, op, v):
            guard let x = record[f], let c = ValueOrder.compareSameKind(x, v) else { return op == .notEqual }
            switch op {
            case .equal: return c == 0
            case .notEqual: return c != 0
            case .less: return c < 0
            case .lessOrEqual: return c <= 0
            case .greater: return c > 0
            case .greaterOrEqual: return c >= 0
            }
        case let .between(f, lo, hi):
            guard let x = record[f], let a = ValueOrder.compareSameKind(x, lo),
                let b = ValueOrder.compareSameKind(x, hi)
            else { return false }
            return a >= 0 && b <= 0
        case let .isIn(f, vs):
            guard let x = record[f] else { return false }
            return vs.contains { ValueOrder.compareSameKind(x, $0) == 0 }
        case let .beginsWith(f, p):
            guard case .string(let s)? = record[f] else { return false }
            return s.utf8.starts(with: p.utf8)
        case let .contains(f, v):
            guard let x = record[f] else { return false }
            if case .list(let l) = x { return l.elements.contains { ValueOrder.compareSameKind($0, v) == 0 } }
            return ValueOrder.compareSameKind(x, v) == 0
        case .and(let ps): return ps.allSatisfy { $0.evaluate(record) }
        case .not(let p): return !p.evaluate(record)
        }
    }

    /// The top-level conjuncts.
    var conjuncts: [Predicate] {
        switch self {
        case .and(let ps): return ps.flatMap(\.conjuncts)
        case .all: return []
        default: return [self]
        }
    }
}

/// The total order queries sort and compare values by.
enum ValueOrder {
    /// Compares two values of the same kind; nil when the kinds differ (or lists are involved).
    static func compareSameKind(_ a: FieldValue, _ b: FieldValue) -> Int? {
        switch (a, b) {
        case let (.string(x), .string(y)): return UTF8Order.compare(x, y)
        case let (.int64(x), .int64(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.double(x), .double(y)):
            return x == y ? 0 : (x < y ? -1 : (x > y ? 1 : (x.isNaN ? (y.isNaN ? 0 : -1) : 1)))
        case let (.bool(x), .bool(y)): return x == y ? 0 : (x ? 1 : -1)
        case let (.date(x), .date(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.reference(x), .reference(y)):
            return x.recordID == y.recordID ? 0 : (x.recordID < y.recordID ? -1 : 1)
        case let (.bytes(x), .bytes(y)): return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
        default: return a == b ? 0 : nil
        }
    }

    /// A total order over optional values: missing first, then by kind, then by value.
    static func compare(_ a: FieldValue?, _ b: FieldValue?) -> Int {
        switch (a, b) {
        case (nil, nil): return 0
        case (nil, _): return -1
        case (_, nil): return 1
        case let (x?, y?):
            if let c = compareSameKind(x, y) { return c }
            let kx = Int(x.kind.rawValue) + (x.isList ? 64 : 0), ky = Int(y.kind.rawValue) + (y.isList ? 64 : 0)
            if kx != ky { return kx < ky ? -1 : 1 }
            let bx = Predicate.valueBytes(x), by = Predicate.valueBytes(y)
            return bx == by ? 0 : (bx.lexicographicallyPrecedes(by) ? -1 : 1)
        }
    }
}

extension Predicate {
    /// A value's canonical bytes, to order values of different kinds deterministically.
    static func valueBytes(_ v: FieldValue) -> [UInt8] {
        var r = Record(recordType: "V", id: Record.ID(name: "v", zone: RecordZone.ID(name: "v")))
        r["v"] = v
        return r.encoded()
    }
}
