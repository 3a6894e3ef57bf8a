// WhereClauseTests: `--where` clauses, quoted values that hold an operator or AND included.

import Testing
import ShoalStore
import ShoalWire
@testable import shoal

@Suite struct WhereClauseTests {
    let notes = RecordZone.ID(name: "notes")

    func parse(_ text: String) throws -> Predicate { try ValueParsing.predicate(text, zone: notes) }

    @Test func plainClauses() throws {
        #expect(try parse("count >= 2") == .compare("count", .greaterOrEqual, .int64(2)))
        #expect(
            try parse("count > 2 AND title == 'x'")
                == .and([.compare("count", .greater, .int64(2)), .compare("title", .equal, .string("x"))]))
        #expect(try parse("title BEGINSWITH 'Mi'") == .beginsWith("title", "Mi"))
        #expect(try parse("a != b") == .compare("a", .notEqual, .string("b")))
    }

    @Test func quotedValuesKeepTheirOperatorsAndAnd() throws {
        #expect(try parse("title == 'a >= b'") == .compare("title", .equal, .string("a >= b")))
        #expect(try parse("title == 'x AND y'") == .compare("title", .equal, .string("x AND y")))
        #expect(
            try parse("title == 'x AND y' AND count < 3")
                == .and([.compare("title", .equal, .string("x AND y")), .compare("count", .less, .int64(3))]))
        #expect(try parse("title CONTAINS 'a == b'") == .contains("title", .string("a == b")))
        #expect(try parse("note BEGINSWITH '<= AND >'") == .beginsWith("note", "<= AND >"))
    }

    @Test func aClauseWithoutAnOperatorSaysHowToQuote() {
        #expect(throws: (any Error).self) { try parse("title 'a == b'") }
    }

    @Test func orNotAndParenthesesFollowTheirPrecedence() throws {
        let a: Predicate = .compare("a", .equal, .int64(1)), b: Predicate = .compare("b", .equal, .int64(2)),
            c: Predicate = .compare("c", .equal, .int64(3))
        // AND binds tighter than OR; OR is NOT (NOT … AND NOT …), as the store has no OR.
        #expect(try parse("a == 1 OR b == 2 AND c == 3") == .not(.and([.not(a), .not(.and([b, c]))])))
        #expect(try parse("(a == 1 OR b == 2) AND c == 3") == .and([.not(.and([.not(a), .not(b)])), c]))
        #expect(try parse("NOT a == 1") == .not(a))
        #expect(
            try parse(#"title == "it's" OR title == 'say ''hi'''"#)
                == .not(
                    .and([
                        .not(.compare("title", .equal, .string("it's"))),
                        .not(.compare("title", .equal, .string("say 'hi'")))
                    ])))
        #expect(
            try parse("title == Milk and eggs") == .compare("title", .equal, .string("Milk and eggs")),
            "lower-case words are not keywords")
        #expect(try parse("count>=2") == .compare("count", .greaterOrEqual, .int64(2)))
        #expect(
            try parse("next == >other")
                == .compare("next", .equal, .reference(Reference(recordID: Record.ID(name: "other", zone: notes)))))
    }

    /// OR means OR on records: evaluated, the parsed predicate matches exactly the records the
    /// expression names (seeded pseudo-random records; the seed prints on failure).
    @Test func orMatchesWhatItSays() throws {
        let p = try parse("(n < 3 OR n > 7) AND NOT tag == 'x'")
        let seed: UInt64 = 38
        var state = seed
        func next() -> UInt64 { state = state &* 6364136223846793005 &+ 1442695040888963407; return state >> 33 }
        for i in 0..<500 {
            var r = Record(recordType: "T", id: Record.ID(name: "r\(i)", zone: notes))
            let n = Int64(next() % 11), x = next() % 2 == 0
            r["n"] = .int64(n)
            r["tag"] = .string(x ? "x" : "y")
            #expect(p.evaluate(r) == ((n < 3 || n > 7) && !x), "seed \(seed), record \(i): n \(n) tag \(x ? "x" : "y")")
        }
    }

    /// Each mistake names what was expected and points at its column.
    @Test func errorsPointAtTheColumn() {
        func message(_ text: String) -> String {
            do { _ = try parse(text); return "" } catch { return "\(error)" }
        }
        let missing = message("title 'a == b'")
        #expect(
            missing.contains("no operator after field title") && missing.contains("column 7")
                && missing.contains("\n        ^"), "\(missing)")
        let unclosed = message("title == 'abc")
        #expect(unclosed.contains("not closed") && unclosed.contains("column 10"), "\(unclosed)")
        let paren = message("(a == 1 OR b == 2")
        #expect(paren.contains("no ) for the ( at column 1"), "\(paren)")
        let dangling = message("a == 1 AND")
        #expect(dangling.contains("a condition where the text ends") && dangling.contains("column 11"), "\(dangling)")
        // An unquoted value runs to the next AND, OR or ")": what follows a ")" must be one.
        let extra = message("(a == 1) b == 2")
        #expect(extra.contains("where AND, OR or the end was expected") && extra.contains("column 10"), "\(extra)")
        #expect(message("a => 1").contains("column 3"))
    }
}
