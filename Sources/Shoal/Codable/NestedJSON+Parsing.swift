// NestedJSON+Parsing: reads a nested value's JSON text back into a CodableNode tree.

import ShoalWire

extension NestedJSON {
    /// The node the JSON `text` describes: objects, arrays, strings, `int64` for integers that
    /// fit, `double` for other numbers, `bool`, null.
    /// - Throws: ``ParseError`` for anything that is not one JSON value within ``maxDepth``.
    static func parse(_ text: String) throws(ParseError) -> CodableNode {
        var p = Parser(bytes: Array(text.utf8))
        p.skipWhitespace()
        let node = try p.value(depth: 0)
        p.skipWhitespace()
        guard p.i == p.bytes.count else { throw ParseError(message: "bytes follow the JSON value", offset: p.i) }
        return node
    }

    struct Parser {
        let bytes: [UInt8]
        var i = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        var current: UInt8? { i < bytes.count ? bytes[i] : nil }

        func fail(_ message: String) -> ParseError { ParseError(message: message, offset: i) }

        mutating func skipWhitespace() {
            while let b = current, b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { i += 1 }
        }

        mutating func expect(_ literal: String) throws(ParseError) {
            for b in literal.utf8 {
                guard current == b else { throw fail("expected \(literal)") }
                i += 1
            }
        }

        mutating func value(depth: Int) throws(ParseError) -> CodableNode {
            guard let b = current else { throw fail("the text ends where a value should be") }
            switch b {
            case UInt8(ascii: "{"):
                guard depth < NestedJSON.maxDepth else {
                    throw fail("nested deeper than \(NestedJSON.maxDepth) levels")
                }
                return try object(depth: depth + 1)
            case UInt8(ascii: "["):
                guard depth < NestedJSON.maxDepth else {
                    throw fail("nested deeper than \(NestedJSON.maxDepth) levels")
                }
                return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .scalar(.string(try string()))
            case UInt8(ascii: "t"): try expect("true"); return .scalar(.bool(true))
            case UInt8(ascii: "f"): try expect("false"); return .scalar(.bool(false))
            case UInt8(ascii: "n"): try expect("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw fail("unexpected byte 0x\(String(b, radix: 16))")
            }
        }

        mutating func object(depth: Int) throws(ParseError) -> CodableNode {
            i += 1
            var entries = [String: CodableNode]()
            skipWhitespace()
            if current == UInt8(ascii: "}") { i += 1; return .object(entries) }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\"") else { throw fail("expected a key string") }
                let keyAt = i
                let key = try string()
                guard entries[key] == nil else {
                    throw ParseError(message: "key \(key.debugDescription) appears twice", offset: keyAt)
                }
                skipWhitespace()
                try expect(":")
                skipWhitespace()
                entries[key] = try value(depth: depth)
                skipWhitespace()
                if current == UInt8(ascii: ",") { i += 1; continue }
                try expect("}")
                return .object(entries)
            }
        }

        mutating func array(depth: Int) throws(ParseError) -> CodableNode {
            i += 1
            var items = [CodableNode]()
            skipWhitespace()
            if current == UInt8(ascii: "]") { i += 1; return .array(items) }
            while true {
                skipWhitespace()
                items.append(try value(depth: depth))
                skipWhitespace()
                if current == UInt8(ascii: ",") { i += 1; continue }
                try expect("]")
                return .array(items)
            }
        }

        mutating func digits() -> Int {
            var n = 0
            while let b = current, b >= UInt8(ascii: "0"), b <= UInt8(ascii: "9") { i += 1; n += 1 }
            return n
        }

        mutating func number() throws(ParseError) -> CodableNode {
            let start = i
            var integral = true
            if current == UInt8(ascii: "-") { i += 1 }
            if current == UInt8(ascii: "0") {
                i += 1
            } else if digits() == 0 {
                throw fail("expected digits")
            }
            if current == UInt8(ascii: ".") {
                i += 1
                integral = false
                guard digits() > 0 else { throw fail("expected digits after the decimal point") }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                i += 1
                integral = false
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { i += 1 }
                guard digits() > 0 else { throw fail("expected exponent digits") }
            }
            let text = String(decoding: bytes[start..<i], as: UTF8.self)
            if integral, let v = Int64(text) { return .scalar(.int64(v)) }
            guard let d = Double(text) else { throw ParseError(message: "\(text) is not a number", offset: start) }
            return .scalar(.double(d))
        }

        mutating func hex4() throws(ParseError) -> UInt32 {
            var v: UInt32 = 0
            for _ in 0..<4 {
                guard let b = current else { throw fail("the text ends inside a \\u escape") }
                let d: UInt32
                switch b {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(b - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(b - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(b - UInt8(ascii: "A") + 10)
                default: throw fail("expected a hexadecimal digit")
                }
                v = v << 4 | d
                i += 1
            }
            return v
        }

        mutating func string() throws(ParseError) -> String {
            i += 1
            var out = [UInt8]()
            while true {
                guard let b = current else { throw fail("the text ends inside a string") }
                i += 1
                switch b {
                case UInt8(ascii: "\""): return String(decoding: out, as: UTF8.self)
                case 0x00..<0x20: i -= 1; throw fail("control character in a string")
                case UInt8(ascii: "\\"):
                    guard let e = current else { throw fail("the text ends inside an escape") }
                    i += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var code = try hex4()
                        if code >= 0xD800 && code < 0xDC00 {
                            try expect("\\u")
                            let low = try hex4()
                            guard low >= 0xDC00 && low < 0xE000 else {
                                throw fail("a high surrogate must be followed by a low one")
                            }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(code) else {
                            throw fail("\\u escape names no Unicode scalar")
                        }
                        out.append(contentsOf: String(Character(scalar)).utf8)
                    default: throw fail("unknown escape")
                    }
                default: out.append(b)
                }
            }
        }
    }
}
