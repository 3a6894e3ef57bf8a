// HTTPAPIPartsTests: the HTTP API's pure parts — byte ranges, the key's comparison and file, JSON values into fields.

import Foundation
@testable import ShoalHTTP
import ShoalWire
import Testing

struct HTTPAPIPartsTests {
    @Test(arguments: [
        ("bytes=0-9", 100, 0..<10), ("bytes=90-", 100, 90..<100), ("bytes=-5", 100, 95..<100),
        ("bytes=95-200", 100, 95..<100),
        ("bytes=-500", 100, 0..<100)
    ])
    func aRangeWithinTheAsset(header: String, size: Int, expected: Range<Int>) {
        #expect(NodeAPI.byteRange(header, size: size) == expected)
    }

    @Test(arguments: [
        "bytes=100-", "bytes=5-2", "bytes=0-1,4-5", "items=0-1", "bytes=", "bytes=-0", "bytes=x-y", "bytes=-1-2"
    ])
    func aRangeOutsideOrMalformed(header: String) {
        #expect(NodeAPI.byteRange(header, size: 100) == nil)
    }

    @Test func theKeyComparesWholly() {
        let key = APIKey(text: "abcdefghijklmnopqrstuvwxyz012345")
        #expect(key.matches("abcdefghijklmnopqrstuvwxyz012345"))
        #expect(!key.matches("abcdefghijklmnopqrstuvwxyz01234"), "a prefix is not the key")
        #expect(!key.matches("abcdefghijklmnopqrstuvwxyz0123456"), "nor is a longer text")
        #expect(!key.matches(""))
        #expect("\(key)" == "APIKey(…)", "a key never reaches a log")
    }

    @Test func theKeyFileIsTheOwnersAndStable() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "shoal-key-\(UInt32.random(in: 0 ... .max))"
        ).path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try APIKey.loadOrCreate(in: dir), again = try APIKey.loadOrCreate(in: dir)
        #expect(first == again && first.text.count == 43)
        #expect(APIKey.random() != first)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: APIKey.path(in: dir))
        #expect(throws: APIKeyError.self, "a key others may read is refused") { try APIKey.load(in: dir) }
    }

    @Test func jsonValuesBecomeFields() throws {
        let zone = RecordZone.ID(name: "notes")
        func parse(_ text: String) throws -> FieldValue? {
            try RecordJSON.value(JSONValue.parse(Array(text.utf8)), field: "f", zone: zone)
        }
        #expect(try parse("2") == .int64(2))
        #expect(try parse("2.5") == .double(2.5))
        #expect(try parse("true") == .bool(true))
        #expect(try parse("null") == nil)
        #expect(try parse(#"["a","b"]"#) == .list(try #require(ListValue([.string("a"), .string("b")]))))
        #expect(try parse(#"{"bytes":"00ff"}"#) == .bytes([0, 255]))
        #expect(
            try parse(#"{"date":"2026-11-22T10:00:00Z"}"#)
                == .date(try #require(Timestamp(iso8601: "2026-11-22T10:00:00Z"))))
        for bad in [
            #"[1,"a"]"#, #"{"bytes":"0g"}"#, #"{"date":"yesterday"}"#, #"{"latitude":91,"longitude":0}"#,
            #"{"other":1}"#, "[[1]]"
        ] {
            #expect(throws: APIError.self, "\(bad)") { try parse(bad) }
        }
    }

    /// The API writes values as `shoal inspect` does (one function), save for assets, which it
    /// writes as hash and size so a client can fetch them; the form goes into lists too.
    @Test func valuesAsJSONDifferOnlyInTheAssetForm() throws {
        let hash = try #require(ContentHash(hex: String(repeating: "ab", count: 32)))
        let asset = FieldValue.asset(Asset(hash: hash, size: 1_234))
        let api = RecordJSON.value(asset) as? [String: Any]
        #expect(api?["asset"] as? String == hash.hex && api?["size"] as? Int64 == 1_234, "\(api ?? [:])")
        let list = RecordJSON.value(.list(try #require(ListValue([asset, asset])))) as? [[String: Any]]
        #expect(list?.count == 2 && list?.allSatisfy { $0["asset"] as? String == hash.hex } == true)
        var r = Record(recordType: "Photo", id: Record.ID(name: "p", zone: RecordZone.ID(name: "notes")))
        r["image"] = asset
        r["title"] = .string("cat")
        r["raw"] = .bytes([0, 255])
        let fields = RecordJSON.object(r)["fields"] as? [String: Any]
        #expect(
            (fields?["image"] as? [String: Any])?["size"] as? Int64 == 1_234 && fields?["title"] as? String == "cat")
        #expect((fields?["raw"] as? [String: Any])?["bytes"] as? String == "00ff")
    }
}
