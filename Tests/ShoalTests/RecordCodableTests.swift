// RecordCodableTests: Codable values to record fields and back, their errors, and system fields.

import Foundation
import Testing
import Shoal

/// A small seeded generator (SplitMix64), so a failing property test names the seed to rerun.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The seed of a property test: `SHOAL_SEED` when set, else a fresh one (printed on failure).
func propertySeed() -> UInt64 {
    if let text = ProcessInfo.processInfo.environment["SHOAL_SEED"], let seed = UInt64(text) { return seed }
    return UInt64.random(in: 0...UInt64.max)
}

@Suite struct RecordCodableTests {
    static let zone = RecordZone.ID(name: "notes")
    static let id = Record.ID(name: "n1", zone: zone)

    struct Address: Codable, Equatable {
        var street: String
        var city: String
        var zip: String?
    }

    enum Priority: Int, Codable { case low = 1, high = 2 }
    enum Mood: String, Codable { case calm, busy }
    enum Shape: Codable, Equatable {
        case circle(radius: Double)
        case square(side: Double)
    }

    struct Note: Codable, Equatable {
        var title: String
        var count: Int
        var level: Int8
        var ratio: Double
        var done: Bool
        var due: Date
        var reminder: Date?
        var blob: Data
        var tags: [String]
        var scores: [Int]
        var weights: [Double]
        var owner: Reference
        var related: [Reference]
        var priority: Priority
        var mood: Mood?
        var address: Address
        var previous: Address?
        var addresses: [Address]
        var shape: Shape
        var attributes: [String: Int]
    }

    static func sample() -> Note {
        Note(
            title: "Groceries", count: 3, level: -128, ratio: 0.25, done: false,
            due: Date(timeIntervalSince1970: 1_795_000_000.5), reminder: nil, blob: Data([0, 1, 255]),
            tags: ["food", "weekly"], scores: [1, -2, 3], weights: [],
            owner: Reference(recordID: Record.ID(name: "alice", zone: zone)),
            related: [Reference(recordID: Record.ID(name: "n0", zone: zone), action: .deleteSelf)],
            priority: .high, mood: .busy,
            address: Address(street: "Main St \"1\"", city: "Oslo", zip: nil),
            previous: Address(street: "Elm", city: "Bergen", zip: "5003"),
            addresses: [Address(street: "A", city: "B", zip: "C")],
            shape: .circle(radius: 2), attributes: ["b": 2, "a": 1])
    }

    /// The code and path of the RecordCodingError `body` throws.
    static func codingError(_ body: () throws -> Void) -> RecordCodingError? {
        do {
            try body()
            Issue.record("expected a RecordCodingError, nothing was thrown")
        } catch let e as RecordCodingError {
            return e
        } catch {
            Issue.record("expected a RecordCodingError, got \(error)")
        }
        return nil
    }

    // MARK: Round trips

    @Test func nestedTypeRoundTripsWithNativeFieldTypes() throws {
        let note = Self.sample()
        let record = try RecordEncoder().encode(note, type: "Note", id: Self.id)
        #expect(record.recordType == "Note" && record.id == Self.id)
        #expect(record["title"] == .string("Groceries"))
        #expect(record["count"] == .int64(3))
        #expect(record["level"] == .int64(-128))
        #expect(record["done"] == .bool(false))
        #expect(record["due"] == .date(Timestamp(millisecondsSince1970: 1_795_000_000_500)))
        #expect(record["reminder"] == nil)
        #expect(record["blob"] == .bytes([0, 1, 255]))
        #expect(record["tags"] == .list(.string(["food", "weekly"])))
        #expect(record["scores"] == .list(.int64([1, -2, 3])))
        #expect(record["weights"] == .list(.double([])))
        #expect(record["owner"] == .reference(note.owner))
        #expect(record["related"] == .list(.reference(note.related)))
        #expect(record["priority"] == .int64(2))
        #expect(record["mood"] == .string("busy"))
        // Nested values: canonical JSON, keys sorted, nil optionals left out.
        #expect(record["address"] == .string(#"{"city":"Oslo","street":"Main St \"1\""}"#))
        #expect(record["attributes"] == .string(#"{"a":1,"b":2}"#))
        #expect(record["shape"] == .string(#"{"circle":{"radius":2.0}}"#))
        #expect(record.allKeys.count == 19)

        #expect(try RecordDecoder().decode(Note.self, from: record) == note)
        // Through the wire bytes too.
        let wire = try Record(decoding: record.encoded())
        #expect(try RecordDecoder().decode(Note.self, from: wire) == note)
        // Deterministic: the same value gives the same bytes.
        #expect(try RecordEncoder().encode(note, type: "Note", id: Self.id).encoded() == record.encoded())
    }

    struct Link: Codable, Equatable {
        var target: Reference
        var seen: Date
        var blob: Data
        var place: Location?
    }

    struct Kitchen: Codable, Equatable {
        var url: URL
        var stamp: Timestamp
        var place: Location
        var photo: Asset
        var photos: [Asset]
        var float: Float
        var dates: [Date]
        var chunks: [Data]
        var moods: [Mood]
        var noMoods: [Mood]
        var link: Link
        var links: [Link]
    }

    /// Shoal's own value types and Foundation's map to native fields at the top level, and keep
    /// their Codable forms inside nested values.
    @Test func shoalAndFoundationTypesRoundTrip() throws {
        let hash = try #require(ContentHash(bytes: [UInt8](repeating: 7, count: 32)))
        let place = Location(
            latitude: 59.91, longitude: 10.75, altitude: 20, timestamp: Timestamp(millisecondsSince1970: 9))
        let link = Link(
            target: Reference(recordID: Record.ID(name: "t", zone: Self.zone), action: .deleteSelf),
            seen: Date(timeIntervalSince1970: -86_400.25), blob: Data([9, 8]), place: place)
        let value = Kitchen(
            url: try #require(URL(string: "https://example.com/a?b=c")), stamp: Timestamp(millisecondsSince1970: -1),
            place: place, photo: Asset(hash: hash, size: 10), photos: [], float: 0.1,
            dates: [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1.001)], chunks: [Data(), Data([1])],
            moods: [.calm, .busy], noMoods: [], link: link, links: [link])
        let record = try RecordEncoder().encode(value, type: "Kitchen", id: Self.id)
        #expect(record["url"] == .string("https://example.com/a?b=c"))
        #expect(record["stamp"] == .date(Timestamp(millisecondsSince1970: -1)))
        #expect(record["place"] == .location(place))
        #expect(record["photo"] == .asset(Asset(hash: hash, size: 10)))
        #expect(record["photos"] == .list(.asset([])))
        #expect(record["float"] == .double(Double(Float(0.1))))
        #expect(
            record["dates"]
                == .list(.date([Timestamp(millisecondsSince1970: 0), Timestamp(millisecondsSince1970: 1001)])))
        #expect(record["chunks"] == .list(.bytes([[], [1]])))
        #expect(record["moods"] == .list(.string(["calm", "busy"])))
        #expect(record["noMoods"] == .string("[]"))
        #expect(
            record["link"]
                == .string(
                    #"{"blob":"CQg=","place":{"altitude":20.0,"latitude":59.91,"longitude":10.75,"timestamp":9},"#
                        + #""seen":-86400250,"target":{"action":1,"recordID":{"name":"t","zone":{"name":"notes","owner":"_defaultOwner"}}}}"#
                ))
        #expect(try RecordDecoder().decode(Kitchen.self, from: Record(decoding: record.encoded())) == value)
    }

    struct Ranges: Codable, Equatable {
        var small: Int8
        var unsigned: UInt8
        var big: UInt64
        var float: Float
        var smalls: [Int8]
    }

    @Test func integerRangesAreCheckedBothWays() throws {
        for (small, unsigned) in [(Int8.min, UInt8.min), (Int8.max, UInt8.max)] {
            let v = Ranges(
                small: small, unsigned: unsigned, big: UInt64(Int64.max), float: 1.5, smalls: [Int8.min, Int8.max])
            #expect(
                try RecordDecoder().decode(Ranges.self, from: RecordEncoder().encode(v, type: "R", id: Self.id)) == v)
        }
        let ok = try RecordEncoder().encode(
            Ranges(small: 0, unsigned: 0, big: 0, float: 0, smalls: []), type: "R", id: Self.id)
        for (field, value, path) in [
            ("small", FieldValue.int64(128), "small"), ("small", .int64(-129), "small"),
            ("unsigned", .int64(-1), "unsigned"), ("unsigned", .int64(256), "unsigned"),
            ("big", .int64(-1), "big"), ("float", .double(1e300), "float"),
            ("smalls", .list(.int64([1, 300])), "smalls[1]")
        ] {
            var r = ok
            r[field] = value
            let e = Self.codingError { _ = try RecordDecoder().decode(Ranges.self, from: r) }
            #expect(e?.code == .valueOutOfRange, "\(field) = \(value)")
            #expect(e?.path == path)
        }
        let e = Self.codingError {
            _ = try RecordEncoder().encode(
                Ranges(small: 0, unsigned: 0, big: .max, float: 0, smalls: []), type: "R", id: Self.id)
        }
        #expect(e?.code == .valueOutOfRange && e?.path == "big" && e?.swiftType == "UInt64")
    }

    @Test func nilOptionalRemovesTheFieldAndUnchangedFieldsStayUnchanged() throws {
        var note = Self.sample()
        note.mood = .calm
        var record = try RecordEncoder().encode(note, type: "Note", id: Self.id)
        record["unrelated"] = .string("kept")
        note.mood = nil
        try RecordEncoder().encode(note, into: &record)
        #expect(record["mood"] == nil)
        #expect(record["unrelated"] == .string("kept"))
        #expect(try RecordDecoder().decode(Note.self, from: record) == note)
    }

    // MARK: Errors

    @Test func wrongFieldTypeNamesThePathAndBothTypes() throws {
        var record = try RecordEncoder().encode(Self.sample(), type: "Note", id: Self.id)
        record["count"] = .string("three")
        let e = Self.codingError { _ = try RecordDecoder().decode(Note.self, from: record) }
        #expect(e?.code == .typeMismatch)
        #expect(e?.path == "count" && e?.swiftType == "Int" && e?.fieldType == "string")

        record = try RecordEncoder().encode(Self.sample(), type: "Note", id: Self.id)
        record["tags"] = .list(.int64([1]))
        let list = Self.codingError { _ = try RecordDecoder().decode(Note.self, from: record) }
        #expect(list?.code == .typeMismatch && list?.path == "tags[0]" && list?.fieldType == "int64")
    }

    @Test func nestedErrorsNameTheDottedPath() throws {
        var record = try RecordEncoder().encode(Self.sample(), type: "Note", id: Self.id)
        record["address"] = .string(#"{"city":"Oslo","street":5}"#)
        let e = Self.codingError { _ = try RecordDecoder().decode(Note.self, from: record) }
        #expect(e?.code == .typeMismatch && e?.path == "address.street" && e?.fieldType == "int64")

        record["address"] = .string(#"{"street":"x"}"#)
        let missing = Self.codingError { _ = try RecordDecoder().decode(Note.self, from: record) }
        #expect(missing?.code == .keyNotFound && missing?.path == "address.city")

        record["address"] = .string("{oops")
        let malformed = Self.codingError { _ = try RecordDecoder().decode(Note.self, from: record) }
        #expect(malformed?.code == .invalidNestedValue && malformed?.path == "address")

        record["address"] = .string(String(repeating: "[", count: 100_000))
        let deep = Self.codingError { _ = try RecordDecoder().decode(Note.self, from: record) }
        #expect(deep?.code == .invalidNestedValue)

        record = try RecordEncoder().encode(Self.sample(), type: "Note", id: Self.id)
        record["addresses"] = .string(#"[{"city":"a","street":"b"},{"city":1,"street":"b"}]"#)
        let element = Self.codingError { _ = try RecordDecoder().decode(Note.self, from: record) }
        #expect(element?.code == .typeMismatch && element?.path == "addresses[1].city")
    }

    @Test func missingFieldAndUnknownRawValue() throws {
        var record = try RecordEncoder().encode(Self.sample(), type: "Note", id: Self.id)
        record["title"] = nil
        let e = Self.codingError { _ = try RecordDecoder().decode(Note.self, from: record) }
        #expect(e?.code == .keyNotFound && e?.path == "title")

        record = try RecordEncoder().encode(Self.sample(), type: "Note", id: Self.id)
        record["priority"] = .int64(7)
        let raw = Self.codingError { _ = try RecordDecoder().decode(Note.self, from: record) }
        #expect(raw?.code == .dataCorrupted && raw?.path == "priority")
    }

    struct BadName: Codable {
        var firstName: String
        enum CodingKeys: String, CodingKey { case firstName = "first-name" }
    }

    @Test func invalidFieldNameTopLevelValueAndLimits() throws {
        let name = Self.codingError {
            _ = try RecordEncoder().encode(BadName(firstName: "A"), type: "Person", id: Self.id)
        }
        #expect(name?.code == .invalidFieldName && name?.path == "first-name")

        let scalar = Self.codingError { _ = try RecordEncoder().encode(5, type: "Number", id: Self.id) }
        #expect(scalar?.code == .unsupportedValue && scalar?.path == "")

        let badType = Self.codingError { _ = try RecordEncoder().encode(Self.sample(), type: "1Note", id: Self.id) }
        #expect(badType?.code == .invalidRecord)

        var limits = WireLimits()
        limits.maxListCount = 2
        let list = Self.codingError {
            _ = try RecordEncoder(limits: limits).encode(Self.sample(), type: "Note", id: Self.id)
        }
        #expect(list?.code == .limitExceeded && list?.path == "scores")

        limits = WireLimits()
        limits.maxRecordBytes = 200
        let size = Self.codingError {
            _ = try RecordEncoder(limits: limits).encode(Self.sample(), type: "Note", id: Self.id)
        }
        #expect(size?.code == .limitExceeded)

        // A failed encode into a record leaves it unchanged.
        var record = try RecordEncoder().encode(Self.sample(), type: "Note", id: Self.id)
        let before = record
        var note = Self.sample()
        note.title = "changed"
        _ = Self.codingError { try RecordEncoder(limits: limits).encode(note, into: &record) }
        #expect(record == before)
    }

    struct Tree: Codable, Equatable {
        var children: [Tree]
    }

    struct Forest: Codable, Equatable {
        var tree: Tree
    }

    /// Nested values round-trip up to the nesting the decoder accepts, and deeper ones are refused
    /// when encoded rather than stored unreadable.
    @Test func nestingDepthIsCheckedWhenEncoding() throws {
        func forest(_ depth: Int) -> Forest {
            var t = Tree(children: [])
            for _ in 0..<depth { t = Tree(children: [t]) }
            return Forest(tree: t)
        }
        let shallow = forest(31)  // 64 levels of objects and arrays: the most a nested value may have
        #expect(
            try RecordDecoder().decode(Forest.self, from: RecordEncoder().encode(shallow, type: "Forest", id: Self.id))
                == shallow)
        let e = Self.codingError { _ = try RecordEncoder().encode(forest(32), type: "Forest", id: Self.id) }
        #expect(e?.code == .limitExceeded && e?.path == "tree")
    }

    // MARK: Properties

    struct Inner: Codable, Equatable {
        var text: String
        var number: Double
        var when: Date?
        var bytes: Data
        var small: [Int16]
    }

    struct Sample: Codable, Equatable {
        var int: Int64
        var small: Int8
        var unsigned: UInt32
        var double: Double
        var flag: Bool
        var text: String
        var maybe: String?
        var when: Date
        var bytes: Data
        var list: [Int16]
        var words: [String]
        var inner: Inner
        var inners: [Inner]
        var table: [String: Double]
    }

    static func randomText(_ g: inout SeededGenerator) -> String {
        let pool: [Unicode.Scalar] = [
            "a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "é", "\u{301}", "€", "😀", "{", "[", ":",
            ","
        ]
        return String(
            String.UnicodeScalarView(
                (0..<Int.random(in: 0...12, using: &g)).map { _ in pool.randomElement(using: &g) ?? "a" }))
    }

    static func randomDouble(_ g: inout SeededGenerator) -> Double {
        switch Int.random(in: 0..<6, using: &g) {
        case 0:
            return [0.0, -0.0, .infinity, -.infinity, .greatestFiniteMagnitude, .leastNonzeroMagnitude].randomElement(
                using: &g) ?? 0
        case 1: return Double(Int64.random(in: .min ... .max, using: &g))
        default:
            let d = Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &g))
            return d.isNaN ? 1.5 : d
        }
    }

    static func randomDate(_ g: inout SeededGenerator) -> Date {
        Timestamp(millisecondsSince1970: Int64.random(in: -62_000_000_000_000...253_000_000_000_000, using: &g)).date
    }

    static func randomInner(_ g: inout SeededGenerator) -> Inner {
        let d = randomDouble(&g)
        return Inner(
            text: randomText(&g), number: d.isNaN ? 0 : d, when: Bool.random(using: &g) ? randomDate(&g) : nil,
            bytes: Data((0..<Int.random(in: 0...8, using: &g)).map { _ in UInt8.random(in: 0...255, using: &g) }),
            small: (0..<Int.random(in: 0...4, using: &g)).map { _ in Int16.random(in: .min ... .max, using: &g) })
    }

    static func randomSample(_ g: inout SeededGenerator) -> Sample {
        let d = randomDouble(&g)
        var table = [String: Double]()
        for _ in 0..<Int.random(in: 0...3, using: &g) { table[randomText(&g)] = randomDouble(&g) }
        table = table.filter { !$0.value.isNaN }
        return Sample(
            int: Int64.random(in: .min ... .max, using: &g), small: Int8.random(in: .min ... .max, using: &g),
            unsigned: UInt32.random(in: 0...UInt32.max, using: &g), double: d.isNaN ? 0 : d,
            flag: Bool.random(using: &g),
            text: randomText(&g), maybe: Bool.random(using: &g) ? randomText(&g) : nil, when: randomDate(&g),
            bytes: Data((0..<Int.random(in: 0...16, using: &g)).map { _ in UInt8.random(in: 0...255, using: &g) }),
            list: (0..<Int.random(in: 0...5, using: &g)).map { _ in Int16.random(in: .min ... .max, using: &g) },
            words: (0..<Int.random(in: 0...3, using: &g)).map { _ in randomText(&g) },
            inner: randomInner(&g), inners: (0..<Int.random(in: 0...3, using: &g)).map { _ in randomInner(&g) },
            table: table)
    }

    @Test func randomValuesRoundTrip() throws {
        let seed = propertySeed()
        var g = SeededGenerator(seed: seed)
        for i in 0..<300 {
            let value = Self.randomSample(&g)
            do {
                let record = try RecordEncoder().encode(value, type: "Sample", id: Self.id)
                let back = try RecordDecoder().decode(Sample.self, from: try Record(decoding: record.encoded()))
                // Equal values, and -0.0 keeps its sign.
                guard back == value, back.double.sign == value.double.sign,
                    back.inner.number.sign == value.inner.number.sign
                else {
                    Issue.record("seed \(seed) (SHOAL_SEED=\(seed)), case \(i): \(value) came back as \(back)")
                    return
                }
            } catch {
                Issue.record("seed \(seed) (SHOAL_SEED=\(seed)), case \(i): \(value) threw \(error)")
                return
            }
        }
    }

    static func randomFieldValue(_ g: inout SeededGenerator) -> FieldValue {
        let ref = Reference(recordID: Record.ID(name: "x", zone: zone))
        let json = [
            #"{"text":"a","number":1,"bytes":"AA==","small":[1]}"#, #"{"text":5}"#, "[", "[]", "{}", "null", "1e999",
            #"{"a":{"a":{"a":[1,2,{"b":null}]}}}"#, #"[{"text":"a","number":"NaN","bytes":"!","small":[99999]}]"#,
            #"{"text":"\ud800"}"#, #"{"x":1,"x":2}"#, "-", "01", #""\u00e9""#, String(repeating: "{\"a\":", count: 70)
        ]
        switch Int.random(in: 0..<12, using: &g) {
        case 0: return .string(json.randomElement(using: &g) ?? "")
        case 1: return .string(randomText(&g))
        case 2:
            return .int64(
                [Int64.min, Int64.max, -1, 0, 128, 70_000, Int64(UInt32.max) + 1].randomElement(using: &g) ?? 0)
        case 3: return .double(randomDouble(&g))
        case 4: return .bool(Bool.random(using: &g))
        case 5: return .bytes([1, 2])
        case 6: return .date(Timestamp(millisecondsSince1970: Int64.random(in: .min ... .max, using: &g)))
        case 7: return .reference(ref)
        case 8: return .list(.int64((0..<3).map { _ in Int64.random(in: .min ... .max, using: &g) }))
        case 9: return .list(.string([json.randomElement(using: &g) ?? "", randomText(&g)]))
        case 10: return .location(Location(latitude: 1, longitude: 2))
        default: return .list(.double([.nan, 1]))
        }
    }

    @Test func decodingArbitraryRecordsNeverTraps() throws {
        let seed = propertySeed()
        var g = SeededGenerator(seed: seed)
        let names = [
            "int", "small", "unsigned", "double", "flag", "text", "maybe", "when", "bytes", "list", "words", "inner",
            "inners", "table",
            "title", "count", "level", "ratio", "done", "due", "reminder", "blob", "tags", "scores", "weights", "owner",
            "related", "priority", "mood", "address", "previous", "addresses", "shape", "attributes"
        ]
        var decoded = 0
        for i in 0..<3_000 {
            var record: Record
            if i % 3 == 0 {
                record = try RecordEncoder().encode(Self.randomSample(&g), type: "Sample", id: Self.id)
            } else if i % 3 == 1 {
                record = try RecordEncoder().encode(Self.sample(), type: "Note", id: Self.id)
            } else {
                record = Record(recordType: "Junk", id: Self.id)
            }
            for _ in 0..<Int.random(in: 1...6, using: &g) {
                record[names.randomElement(using: &g) ?? "int"] =
                    Bool.random(using: &g) ? Self.randomFieldValue(&g) : nil
            }
            for decode in [
                { _ = try RecordDecoder().decode(Sample.self, from: record) },
                { _ = try RecordDecoder().decode(Note.self, from: record) }
            ] {
                do {
                    try decode()
                    decoded += 1
                } catch is RecordCodingError {
                } catch {
                    Issue.record(
                        "seed \(seed) (SHOAL_SEED=\(seed)), case \(i): \(record) threw \(error), not a RecordCodingError"
                    )
                    return
                }
            }
        }
        #expect(decoded > 0)
    }

    // MARK: System fields

    @Test func systemFieldsRoundTripAndRejectGarbage() throws {
        var record = try RecordEncoder().encode(Self.sample(), type: "Note", id: Self.id)
        record.parent = Reference(recordID: Record.ID(name: "folder", zone: Self.zone))
        let bytes = record.encodedSystemFields()
        let restored = try Record(systemFields: bytes)
        #expect(restored.fields.isEmpty)
        #expect(restored.recordType == "Note" && restored.id == Self.id && restored.parent == record.parent)

        func code(_ bytes: [UInt8]) -> WireError.Code? {
            do {
                _ = try Record(systemFields: bytes)
                Issue.record("\(bytes.count) bytes were accepted as system fields")
            } catch {
                return error.code
            }
            return nil
        }
        #expect(code(record.encoded()) == .invalidValue)  // a whole record, fields and all
        #expect(code(bytes + [0]) == .trailingBytes)
        #expect(code([]) == .truncated)
        #expect(code(Array(bytes.dropLast())) != nil)
        var g = SeededGenerator(seed: propertySeed())
        for _ in 0..<2_000 {
            var garbage = bytes
            for _ in 0..<Int.random(in: 1...4, using: &g) {
                garbage[Int.random(in: 0..<garbage.count, using: &g)] = UInt8.random(in: 0...255, using: &g)
            }
            if let r = try? Record(systemFields: garbage) { #expect(r.fields.isEmpty) }
        }
    }

    @Test func restoredSystemFieldsSaveAgainstTheStore() async throws {
        let dir = FileManager.default.temporaryDirectory.path + "/shoal-codable-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try Store.open(directory: dir)
        _ = try await store.createZone(Self.zone)

        var note = Self.sample()
        let saved = try await store.save(try RecordEncoder().encode(note, type: "Note", id: Self.id))
        let cached = saved.encodedSystemFields()  // what an app keeps beside its own copy of `note`

        // Later: rebuild the record from the cache, change one property, save if nobody else did.
        var restored = try Record(systemFields: cached)
        #expect(restored.changeTag == saved.changeTag && restored.creationDate == saved.creationDate)
        note.title = "Groceries and more"
        try RecordEncoder().encode(note, into: &restored)
        let resaved = try await store.save(restored, policy: .ifServerRecordUnchanged)
        #expect(try RecordDecoder().decode(Note.self, from: resaved) == note)
        #expect(resaved.changeTag != saved.changeTag)

        // Encoding into a fetched record marks only what changed.
        var fetched = try await store.record(for: Self.id)
        note.count = 4
        try RecordEncoder().encode(note, into: &fetched)
        #expect(fetched.changedKeys == ["count"])

        // The stale cache is refused.
        var stale = try Record(systemFields: cached)
        stale["title"] = .string("lost update")
        do {
            _ = try await store.save(stale, policy: .ifServerRecordUnchanged)
            Issue.record("a save with stale system fields succeeded")
        } catch {
            #expect(error.code == .serverRecordChanged)
        }
    }
}
