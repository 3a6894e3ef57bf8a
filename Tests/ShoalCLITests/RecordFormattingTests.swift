// RecordFormattingTests: `shoal get` and `shoal watch` show a field's value, and the values of its
// concurrent slots beside it, once each.

import Foundation
import Testing
import ShoalWire
@testable import shoal

@Suite struct RecordFormattingTests {
    /// A merge of two concurrent writes of `title`: the later is the value, the earlier is shown
    /// as concurrent, and JSON holds each field once.
    @Test func concurrentSlotsAreShownBesideTheValue() throws {
        let a = NodeID(high: 0xA, low: 1), b = NodeID(high: 0xB, low: 2)
        let vv = VersionVector([(a, HLC(rawValue: 100)), (b, HLC(rawValue: 90))])
        let r = Record(
            recordType: "Note", id: Record.ID(name: "n", zone: RecordZone.ID(name: "notes")), parent: nil,
            creation: Dot(node: a, hlc: HLC(rawValue: 10)), versionVector: vv,
            heads: [Record.Head(node: a, isDeletion: false), Record.Head(node: b, isDeletion: false)],
            fields: [
                Record.Field(name: "body", value: .string("text"), stamp: Dot(node: a, hlc: HLC(rawValue: 10))),
                Record.Field(name: "title", value: .string("from a"), stamp: Dot(node: a, hlc: HLC(rawValue: 100))),
                Record.Field(name: "title", value: .string("from b"), stamp: Dot(node: b, hlc: HLC(rawValue: 90)))
            ],
            extensions: [])
        try r.validate()
        let lines = RecordFormatting.lines(r)
        #expect(lines.filter { $0.contains("title") }.count == 1)
        #expect(
            lines.contains {
                $0.contains("title = ") && $0.contains("from a") && $0.contains("concurrent: ") && $0.contains("from b")
            })
        let json = RecordFormatting.json(r)
        let fields = try #require(json["fields"] as? [String: Any])
        #expect(fields.keys.sorted() == ["body", "title"])
        let concurrent = try #require(json["concurrent"] as? [String: [Any]])
        #expect(concurrent.keys.sorted() == ["title"] && concurrent["title"]?.count == 1)
    }
}
