// CodableNode: the tree a value encodes to before it becomes fields, and decodes from.

import ShoalWire

/// A value as the record coders see it: a field value, a list, or a nested structure.
///
/// The encoder builds this tree from a value's `encode(to:)`; each top-level entry becomes one
/// field (``RecordEncoder``). The decoder builds it from a record's fields, and parses a nested
/// value's JSON text into it when a type asks for a keyed or unkeyed container there.
indirect enum CodableNode {
    /// No value (a nil optional).
    case null
    /// One field value; never a list.
    case scalar(FieldValue)
    /// A list field value, from an array of field scalars.
    case list(ListValue)
    /// An unkeyed container's elements.
    case array([CodableNode])
    /// A keyed container's entries.
    case object([String: CodableNode])

    /// What this node holds, as error messages name it.
    var typeName: String {
        switch self {
        case .null: return "null"
        case .scalar(let v): return v.kind.description
        case .list(let l): return "list of \(l.elementKind)"
        case .array: return "array"
        case .object: return "object"
        }
    }

    var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}
