// ChangedKeysTests: the helpers save policies use — keys a delta touches, keys that differ, applying changedKeys.

import Testing
import ShoalDiff
import ShoalSamples
@testable import ShoalWire

@Suite struct ChangedKeysTests {
    static let zone = RecordZone.ID(name: "z")

    static func saved(_ fields: [String: FieldValue], at t: UInt64 = 1 << 20) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: "n", zone: zone))
        for (k, v) in fields { r[k] = v }
        return Stamping.saved(r, by: NodeID(high: 1, low: 1), at: HLC(rawValue: t))
    }

    @Test func deltaKeysAndDifferingKeys() {
        let old = Self.saved(["a": .int64(1), "b": .string("x"), "c": .bool(true)])
        var new = old
        new["a"] = .int64(2)
        new["c"] = nil
        new["d"] = .double(1)
        #expect(diff(old, new).changedKeys == ["a", "c", "d"])
        #expect(new.changedKeys(since: old) == ["a", "c", "d"])
        // Re-stamping the same values changes no key.
        let restamped = Stamping.saved(
            Record(
                recordType: "Note", id: old.id, parent: nil, creation: nil,
                versionVector: VersionVector(), heads: [],
                fields: old.fields.map { Record.Field(name: $0.name, value: $0.value) }, extensions: []),
            by: NodeID(high: 2, low: 2), at: HLC(rawValue: 1 << 30))
        #expect(restamped.changedKeys(since: old).isEmpty)
    }

    @Test func applyingChangedKeysKeepsTheServersOtherFields() {
        let ancestor = Self.saved(["title": .string("t"), "body": .string("b"), "tags": .list(.string([]))])
        var client = ancestor
        client["title"] = .string("client title")
        client["tags"] = nil
        var serverEdit = ancestor
        serverEdit["body"] = .string("server body")
        let server = Stamping.saved(serverEdit, by: NodeID(high: 2, low: 2), at: HLC(rawValue: 1 << 21))
        let result = server.applyingChangedKeys(of: client)
        #expect(result["title"] == .string("client title"))
        #expect(result["body"] == .string("server body"))
        #expect(result["tags"] == nil)
        #expect(result.changedKeys == ["tags", "title"])
        #expect(result.versionVector == server.versionVector)
    }
}
