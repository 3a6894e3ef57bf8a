// JSONValue: a request body's JSON, decoded with its types intact (1 is an integer, 1.0 a double, true a bool).

import Foundation

/// Any JSON value. Decoding keeps JSON's own types apart, which `JSONSerialization` does not
/// (its numbers answer to `Bool` too).
package indirect enum JSONValue: Decodable, Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    package init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? c.decode(Double.self) {
            self = .double(d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    /// Parses a request body.
    /// - Throws: ``APIError`` 400 naming what is not JSON.
    package static func parse(_ bytes: [UInt8]) throws(APIError) -> JSONValue {
        do {
            return try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        } catch {
            throw APIError.invalid(
                "the request body is not JSON (\(error)); send a JSON object with Content-Type: application/json")
        }
    }

    /// The members of an object, or a 400 naming `what`.
    package func object(_ what: String) throws(APIError) -> [String: JSONValue] {
        guard case .object(let o) = self else { throw APIError.invalid("\(what) must be a JSON object") }
        return o
    }

    /// The text of a string, nil for null or absent; a 400 naming `what` for any other type.
    package func string(_ what: String) throws(APIError) -> String? {
        switch self {
        case .null: return nil
        case .string(let s): return s
        default: throw APIError.invalid("\(what) must be a string")
        }
    }
}

extension Optional where Wrapped == JSONValue {
    /// The text of a string member, nil when absent or null; a 400 naming `what` otherwise.
    package func string(_ what: String) throws(APIError) -> String? {
        guard let value = self else { return nil }
        return try value.string(what)
    }
}
