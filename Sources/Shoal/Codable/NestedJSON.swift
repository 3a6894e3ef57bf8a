// NestedJSON: the canonical JSON text of a nested value, stored in one string field.

import ShoalWire
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Writes and reads the JSON text that holds a nested value (a struct, an array of structs, a
/// dictionary…) in one `string` field.
///
/// The text is canonical, so equal values give equal bytes on every node: no whitespace; object
/// keys sorted by their UTF-8 bytes; nil optionals left out; integers in decimal; doubles in
/// Swift's shortest round-tripping form (always with a `.` or an exponent), and `"NaN"`,
/// `"Infinity"`, `"-Infinity"` for what JSON cannot write; strings with only `"`, `\` and
/// control characters escaped; dates as integer milliseconds since 1970; bytes as base64;
/// references, assets and locations as their `Codable` forms. Parsing accepts any RFC 8259
/// JSON text up to ``maxDepth`` levels of nesting, and rejects duplicate keys.
enum NestedJSON {
    /// The deepest nesting of arrays and objects a nested value may have.
    static let maxDepth = 64

    /// A parse failure: what was wrong, at which byte of the text.
    struct ParseError: Error {
        let message: String
        let offset: Int
    }

    // MARK: Writing

    /// The canonical JSON text of `node`, the value of field `field`.
    /// - Throws: ``RecordCodingError`` `limitExceeded` when arrays and objects nest deeper than
    ///   ``maxDepth`` (the text would not parse back), or what encoding a reference, asset or
    ///   location throws (nothing in practice).
    static func text(of node: CodableNode, field: String) throws -> String {
        var out = [UInt8]()
        guard try write(node, into: &out, depth: 0) else {
            throw RecordCodingError(
                .limitExceeded, path: field, fieldType: "string",
                "the nested value nests arrays and objects deeper than \(maxDepth) levels")
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `node`'s text to `out`; false when it nests deeper than ``maxDepth`` below `depth`.
    static func write(_ node: CodableNode, into out: inout [UInt8], depth: Int) throws -> Bool {
        switch node {
        case .list, .array, .object:
            guard depth < maxDepth else { return false }
        case .null, .scalar:
            break
        }
        let inner = depth + 1
        switch node {
        case .null: out.append(contentsOf: "null".utf8)
        case .scalar(let v): return try write(v, into: &out, depth: depth)
        case .list(let l):
            out.append(UInt8(ascii: "["))
            for (i, v) in l.elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                guard try write(v, into: &out, depth: inner) else { return false }
            }
            out.append(UInt8(ascii: "]"))
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, n) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                guard try write(n, into: &out, depth: inner) else { return false }
            }
            out.append(UInt8(ascii: "]"))
        case .object(let entries):
            out.append(UInt8(ascii: "{"))
            let keys = entries.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            var first = true
            for key in keys {
                guard let n = entries[key], !n.isNull else { continue }
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                guard try write(n, into: &out, depth: inner) else { return false }
            }
            out.append(UInt8(ascii: "}"))
        }
        return true
    }

    /// Appends the text of one field value; references, assets and locations are objects, and
    /// count as one level of nesting at `depth`.
    static func write(_ value: FieldValue, into out: inout [UInt8], depth: Int) throws -> Bool {
        switch value {
        case .string(let s): writeString(s, into: &out)
        case .int64(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d):
            if d.isNaN {
                writeString(NonFiniteText.nan, into: &out)
            } else if d.isInfinite {
                writeString(d < 0 ? NonFiniteText.minusInfinity : NonFiniteText.infinity, into: &out)
            } else {
                out.append(contentsOf: d.description.utf8)
            }
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .bytes(let b): writeString(Data(b).base64EncodedString(), into: &out)
        case .date(let t): out.append(contentsOf: String(t.millisecondsSince1970).utf8)
        case .reference(let r): return try write(encodedForm(r), into: &out, depth: depth)
        case .asset(let a): return try write(encodedForm(a), into: &out, depth: depth)
        case .location(let l): return try write(encodedForm(l), into: &out, depth: depth)
        case .list(let l): return try write(CodableNode.list(l), into: &out, depth: depth)
        }
        return true
    }

    /// The node `value`'s own `encode(to:)` makes (not the field it maps to).
    static func encodedForm(_ value: some Encodable) throws -> CodableNode {
        let encoder = NodeEncoder(codingPath: [], userInfo: [:])
        try value.encode(to: encoder)
        return encoder.ref.node
    }

    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
            case 0x0A: out.append(contentsOf: "\\n".utf8)
            case 0x0D: out.append(contentsOf: "\\r".utf8)
            case 0x09: out.append(contentsOf: "\\t".utf8)
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: "\\u00".utf8)
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0x0F)])
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
