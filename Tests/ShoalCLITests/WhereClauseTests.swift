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
        #expect(try parse("count > 2 AND title == 'x'") == .and([.compare("count", .greater, .int64(2)), .compare("title", .equal, .string("x"))]))
        #expect(try parse("title BEGINSWITH 'Mi'") == .beginsWith("title", "Mi"))
        #expect(try parse("a != b") == .compare("a", .notEqual, .string("b")))
    }

    @Test func quotedValuesKeepTheirOperatorsAndAnd() throws {
        #expect(try parse("title == 'a >= b'") == .compare("title", .equal, .string("a >= b")))
        #expect(try parse("title == 'x AND y'") == .compare("title", .equal, .string("x AND y")))
        #expect(try parse("title == 'x AND y' AND count < 3") == .and([.compare("title", .equal, .string("x AND y")), .compare("count", .less, .int64(3))]))
        #expect(try parse("title CONTAINS 'a == b'") == .contains("title", .string("a == b")))
        #expect(try parse("note BEGINSWITH '<= AND >'") == .beginsWith("note", "<= AND >"))
    }

    @Test func aClauseWithoutAnOperatorSaysHowToQuote() {
        #expect(throws: (any Error).self) { try parse("title 'a == b'") }
    }
}
