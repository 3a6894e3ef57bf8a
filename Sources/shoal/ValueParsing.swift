// ValueParsing: `field=value` and `field:=typed` arguments of `shoal put`, and `--where` clauses.

import Foundation
import Shoal

/// Parses the field arguments of `shoal put`:
/// - `title=Hello world` — a string;
/// - `n:=42` (int64), `x:=4.5` (double), `done:=true` (bool), `d:=2026-11-22T10:00:00Z` (date),
///   `tags:=[a,b]` (a list; elements typed the same way, all of one type), `ref:=>other-record`
///   (a reference to a record of the same zone), `where:=@48.85,2.35` (a location);
/// - `field:=null` removes the field.
enum ValueParsing {
    typealias Failure = ValueSyntax.Failure

    static func field(_ argument: String, zone: RecordZone.ID) throws -> (String, FieldValue?) {
        if let r = argument.range(of: ":=") {
            let name = String(argument[..<r.lowerBound])
            try checkName(name, argument)
            let text = String(argument[r.upperBound...])
            if text == "null" { return (name, nil) }
            return (name, try typed(text, zone: zone, argument: argument))
        }
        guard let r = argument.range(of: "=") else {
            throw Failure(
                description:
                    "\(argument.debugDescription) is not field=value or field:=typed-value (e.g. title=Hello, n:=42, d:=2026-11-22T10:00:00Z, tags:=[a,b])"
            )
        }
        let name = String(argument[..<r.lowerBound])
        try checkName(name, argument)
        let text = String(argument[r.upperBound...])
        // `field=@@text` is the text "@text" (`field=@path` is a file: see ``file(_:)``).
        return (name, .string(text.hasPrefix("@@") ? String(text.dropFirst()) : text))
    }

    /// The field and path of a `field=@path` argument (a file to store as an asset), else nil.
    static func file(_ argument: String) -> (field: String, path: String)? {
        guard !argument.contains(":="), let r = argument.range(of: "=@") else { return nil }
        let name = String(argument[..<r.lowerBound])
        let path = String(argument[r.upperBound...])
        guard !path.isEmpty, !path.hasPrefix("@"), (try? checkName(name, argument)) != nil else { return nil }
        return (name, path)
    }

    static func checkName(_ name: String, _ argument: String) throws {
        guard let first = name.unicodeScalars.first, first.isASCII, CharacterSet.letters.contains(first),
            name.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_") })
        else {
            throw Failure(
                description:
                    "field name in \(argument.debugDescription) must start with a letter and use only letters, digits and _"
            )
        }
    }

    /// A typed value: int64, double, bool, date, reference, location or list.
    static func typed(_ text: String, zone: RecordZone.ID, argument: String) throws -> FieldValue {
        if text.hasPrefix("[") && text.hasSuffix("]") {
            let inner = text.dropFirst().dropLast()
            let parts =
                inner.isEmpty
                ? []
                : inner.split(separator: ",", omittingEmptySubsequences: false).map {
                    String($0).trimmingCharacters(in: .whitespaces)
                }
            let values = try parts.map { try ValueSyntax.scalar($0, zone: zone, argument: argument, allowString: true) }
            let kind = values.first?.kind ?? .string
            guard let list = ListValue(values, kind: kind) else {
                throw Failure(
                    description:
                        "list in \(argument.debugDescription) mixes types; a list holds one type (e.g. [1,2,3] or [a,b])"
                )
            }
            return .list(list)
        }
        return try ValueSyntax.scalar(text, zone: zone, argument: argument, allowString: false)
    }

    /// A `--where` expression: comparisons `field OP value` joined by `AND`, `OR` and `NOT`, with
    /// parentheses; OP is one of `== != < <= > >= BEGINSWITH CONTAINS`. Values are typed as in
    /// `put`; `'x'` or `"x"` quotes a string, and an operator or keyword inside quotes is part of
    /// the value (``WhereParser``, which the HTTP API's `where` parameter reads too).
    static func predicate(_ text: String, zone: RecordZone.ID) throws -> ShoalStore.Predicate {
        try WhereParser.parse(text, zone: zone, label: "--where")
    }
}
