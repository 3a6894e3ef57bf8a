// WhereParser: `shoal query --where` and the HTTP API's `where` — comparisons joined by AND, OR
// and NOT, with parentheses and quoted values; an error points at the column where it went wrong.

package import ShoalWire

/// Parses a `where` condition (`shoal query --where`, the HTTP API's `?where=`) into a predicate.
///
/// ```
/// expression := term (OR term)*
/// term       := factor (AND factor)*
/// factor     := NOT factor | ( expression ) | field OP value
/// OP         := == | != | < | <= | > | >= | BEGINSWITH | CONTAINS
/// value      := 'text' | "text" | words up to AND, OR, ) or the end, typed as in `shoal put`
/// ```
/// Keywords are upper case; a quote inside a quoted value is written twice (`'it''s'`). The
/// store has no OR: `a OR b` becomes `NOT (NOT a AND NOT b)`, which reads every record of the
/// type (indexes serve comparisons joined by AND).
///
/// A condition holds at most ``maxLength`` characters and nests NOT and parentheses at most
/// ``maxNesting`` deep, so its predicate always fits a query cursor.
package struct WhereParser {
    /// A condition that does not parse: what was expected, and where.
    package struct Failure: Error, CustomStringConvertible {
        /// The condition as given.
        package let condition: String
        /// The 1-based column (in characters) where it went wrong.
        package let column: Int
        /// What was wrong there, without the column.
        package let reason: String
        /// The name the condition was given under (`--where`, `where`).
        package let label: String

        /// `LABEL: REASON, at column N:`, then the condition with a caret under the column.
        package var description: String {
            let caret = String(repeating: " ", count: max(0, column - 1)) + "^"
            return "\(label): \(reason), at column \(column):\n  \(condition)\n  \(caret)"
        }
    }

    /// The longest condition, in characters.
    package static let maxLength = 4_096
    /// The deepest nesting of NOT and parentheses.
    package static let maxNesting = 12

    struct Token {
        enum Kind { case word, quoted, op, open, close }
        let kind: Kind
        let text: String
        /// 1-based, in characters.
        let column: Int
        /// Whether a space or the start of the text comes right before it.
        let spaced: Bool
    }

    let text: String
    let zone: RecordZone.ID
    let label: String
    private(set) var tokens: [Token] = []
    private var next = 0
    private var depth = 0

    static let comparisons: [String: Predicate.Comparison] = [
        "==": .equal, "!=": .notEqual, "<": .less, "<=": .lessOrEqual, ">": .greater, ">=": .greaterOrEqual
    ]

    /// Parses `text` whole; values such as `>name` refer to records of `zone`.
    /// - Throws: ``Failure`` naming `label`, the column and what was expected there.
    package static func parse(_ text: String, zone: RecordZone.ID, label: String) throws(Failure) -> Predicate {
        var p = WhereParser(text: text, zone: zone, label: label)
        guard text.count <= maxLength else {
            throw Failure(
                condition: String(text.prefix(80)) + "…", column: maxLength + 1,
                reason:
                    "the condition has \(text.count) characters, more than the limit of \(maxLength); split the query or narrow it by type",
                label: label)
        }
        p.tokens = try p.tokenize()
        guard !p.tokens.isEmpty else { throw p.failure("an empty condition", column: 1) }
        let result = try p.expression()
        if let extra = p.peek {
            throw p.failure(
                "\(extra.text.debugDescription) where AND, OR or the end was expected", column: extra.column)
        }
        return result
    }

    private init(text: String, zone: RecordZone.ID, label: String) {
        self.text = text
        self.zone = zone
        self.label = label
    }

    private var peek: Token? { next < tokens.count ? tokens[next] : nil }

    private mutating func take() -> Token? {
        defer { next += 1 }
        return peek
    }

    private func isKeyword(_ t: Token?, _ word: String) -> Bool { t?.kind == .word && t?.text == word }

    private mutating func expression() throws(Failure) -> Predicate {
        var terms = [try term()]
        while isKeyword(peek, "OR") {
            _ = take()
            terms.append(try term())
        }
        return terms.count == 1 ? terms[0] : .not(.and(terms.map { .not($0) }))
    }

    private mutating func term() throws(Failure) -> Predicate {
        var factors = [try factor()]
        while isKeyword(peek, "AND") {
            _ = take()
            factors.append(try factor())
        }
        return factors.count == 1 ? factors[0] : .and(factors)
    }

    private mutating func factor() throws(Failure) -> Predicate {
        guard let t = take() else { throw failure("a condition where the text ends", column: text.count + 1) }
        if isKeyword(t, "NOT") || t.kind == .open {
            guard depth < Self.maxNesting else {
                throw failure(
                    "NOT and parentheses nest more than \(Self.maxNesting) deep here, the limit; write the condition flatter",
                    column: t.column)
            }
            depth += 1
        }
        defer { if isKeyword(t, "NOT") || t.kind == .open { depth -= 1 } }
        if isKeyword(t, "NOT") { return .not(try factor()) }
        if t.kind == .open {
            let inner = try expression()
            guard let close = take(), close.kind == .close else {
                throw failure(
                    "no ) for the ( at column \(t.column)",
                    column: tokens.last.map { $0.column + $0.text.count } ?? t.column)
            }
            return inner
        }
        guard t.kind == .word, !["AND", "OR", "BEGINSWITH", "CONTAINS"].contains(t.text) else {
            throw failure("\(t.text.debugDescription) where a field name was expected", column: t.column)
        }
        let field = t.text
        guard let op = take(), op.kind == .op || isKeyword(op, "BEGINSWITH") || isKeyword(op, "CONTAINS") else {
            let where_ = tokens.indices.contains(next - 1) ? tokens[next - 1].column : text.count + 1
            throw failure(
                "no operator after field \(field) (one of == != < <= > >= BEGINSWITH CONTAINS; quote a text value that holds one: title == 'a AND b')",
                column: where_)
        }
        let (raw, quoted, column) = try value(after: op)
        let typed: FieldValue
        if quoted {
            typed = .string(raw)
        } else {
            typed = (try? ValueSyntax.scalar(raw, zone: zone, argument: text, allowString: false)) ?? .string(raw)
        }
        switch op.text {
        case "BEGINSWITH":
            guard quoted || typed == .string(raw) else {
                throw failure("BEGINSWITH takes text; quote it: \(field) BEGINSWITH '\(raw)'", column: column)
            }
            return .beginsWith(field, raw)
        case "CONTAINS": return .contains(field, typed)
        default:
            guard let cmp = Self.comparisons[op.text] else {
                throw failure("unknown operator \(op.text)", column: op.column)
            }
            return .compare(field, cmp, typed)
        }
    }

    /// The value after `op`: a quoted string, or the words up to AND, OR, ) or the end (a `>`
    /// written right before a word is a reference, as in `put`).
    private mutating func value(after op: Token) throws(Failure) -> (String, Bool, Int) {
        guard let first = peek, first.kind != .close, !isKeyword(first, "AND"), !isKeyword(first, "OR") else {
            throw failure("no value after \(op.text)", column: peek?.column ?? text.count + 1)
        }
        if first.kind == .quoted {
            _ = take()
            return (first.text, true, first.column)
        }
        var words = [String]()
        while let t = peek, t.kind == .word || t.kind == .op, !isKeyword(t, "AND"), !isKeyword(t, "OR") {
            _ = take()
            // `>name` (no space between): a reference; otherwise words join with one space.
            if let last = words.last, last == ">", !t.spaced {
                words[words.count - 1] = ">" + t.text
            } else {
                words.append(t.text)
            }
        }
        return (words.joined(separator: " "), false, first.column)
    }

    private func tokenize() throws(Failure) -> [Token] {
        var out = [Token]()
        let chars = Array(text)
        var i = 0
        while i < chars.count {
            let c = chars[i]
            let spaced = i == 0 || chars[i - 1] == " "
            if c == " " { i += 1; continue }
            if c == "(" || c == ")" {
                out.append(Token(kind: c == "(" ? .open : .close, text: String(c), column: i + 1, spaced: spaced))
                i += 1
            } else if c == "'" || c == "\"" {
                var s = ""
                var j = i + 1
                var closed = false
                while j < chars.count {
                    if chars[j] == c {
                        if j + 1 < chars.count && chars[j + 1] == c { s.append(c); j += 2; continue }
                        closed = true
                        break
                    }
                    s.append(chars[j])
                    j += 1
                }
                guard closed else { throw failure("the quote opened here is not closed", column: i + 1) }
                out.append(Token(kind: .quoted, text: s, column: i + 1, spaced: spaced))
                i = j + 1
            } else if "=!<>".contains(c) {
                let two = i + 1 < chars.count ? String(chars[i...i + 1]) : ""
                let op = ["==", "!=", "<=", ">="].contains(two) ? two : String(c)
                guard Self.comparisons[op] != nil else {
                    throw failure("\(op.debugDescription) is not an operator (== != < <= > >=)", column: i + 1)
                }
                out.append(Token(kind: .op, text: op, column: i + 1, spaced: spaced))
                i += op.count
            } else {
                var j = i
                while j < chars.count, !" ()'\"=!<>".contains(chars[j]) { j += 1 }
                out.append(Token(kind: .word, text: String(chars[i..<j]), column: i + 1, spaced: spaced))
                i = j
            }
        }
        return out
    }

    /// An error naming `what` and pointing at `column` under the expression.
    private func failure(_ what: String, column: Int) -> Failure {
        Failure(condition: text, column: column, reason: what, label: label)
    }
}
