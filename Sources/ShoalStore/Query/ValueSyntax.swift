// ValueSyntax: a field value written as text (`42`, `4.5`, `true`, a date, `>name`, `@lat,lon`),
// as `shoal put FIELD:=VALUE` and `where` conditions read it.

import Foundation
package import ShoalWire

/// The text forms of scalar field values, shared by `shoal put` and ``WhereParser`` (the CLI's
/// `--where` and the HTTP API's `where` parameter).
package enum ValueSyntax {
    /// A value that is none of the forms, with a message naming it and the forms it may take.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
        package init(description: String) { self.description = description }
    }

    /// The scalar `text` stands for: an int64, double, bool, ISO 8601 date, `>reference` (to a
    /// record of `zone`) or `@latitude,longitude`; with `allowString`, any other text is a string.
    /// - Throws: ``Failure`` naming `argument` (the whole input `text` came from) and the forms.
    package static func scalar(_ text: String, zone: RecordZone.ID, argument: String, allowString: Bool) throws(Failure)
        -> FieldValue
    {
        if let i = Int64(text) { return .int64(i) }
        if let d = Double(text), text.contains(".") || text.lowercased().contains("e") { return .double(d) }
        if text == "true" || text == "false" { return .bool(text == "true") }
        if text.first?.isNumber == true, let t = Timestamp(iso8601: text) { return .date(t) }
        if text.hasPrefix(">") {
            let name = String(text.dropFirst())
            guard !name.isEmpty else {
                throw Failure(description: "reference in \(argument.debugDescription) needs a record name after >")
            }
            return .reference(Reference(recordID: Record.ID(name: name, zone: zone)))
        }
        if text.hasPrefix("@") {
            let parts = text.dropFirst().split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 2, let lat = parts[0], let lon = parts[1] else {
                throw Failure(
                    description: "location in \(argument.debugDescription) is @latitude,longitude (e.g. @48.85,2.35)")
            }
            return .location(Location(latitude: lat, longitude: lon))
        }
        if allowString { return .string(text) }
        throw Failure(
            description:
                "\(text.debugDescription) in \(argument.debugDescription) is not an int, double, bool, ISO 8601 date, >reference, @lat,lon or [list]; for text use field=value"
        )
    }
}
