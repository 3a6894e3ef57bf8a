// SpecVectorCases: the values behind Spec/vectors — valid values of every kind and malformed bytes.

import ShoalSamples
@testable import ShoalWire

/// Shared nodes, zones and clocks of the vectors.
enum SpecFixtures {
    /// The zone of every record, value and delta vector unless one says otherwise.
    static let zone = RecordZone.ID(name: "notes")
    /// A zone with an explicit owner, for references that leave the record's zone.
    static let other = RecordZone.ID(name: "archive", owner: "alice")
    static let a = NotesCorpus.nodes[0]
    static let b = NotesCorpus.nodes[1]
    static let c = NotesCorpus.nodes[2]
    /// 2026-11-19T…Z, the base of the HLC timestamps.
    static let ms: UInt64 = 1_795_000_000_000

    static func hlc(_ plusMs: UInt64, _ logical: UInt16 = 0) -> HLC { HLC(milliseconds: ms + plusMs, logical: logical) }
    static func dot(_ n: NodeID, _ plusMs: UInt64, _ logical: UInt16 = 0) -> Dot {
        Dot(node: n, hlc: hlc(plusMs, logical))
    }

    static let hash = ContentHash(hex: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")!
    static let hash2 = ContentHash(hex: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")!
}

/// Byte builders for hand-made (mostly malformed) inputs.
enum Raw {
    static func varint(_ v: UInt64) -> [UInt8] {
        var v = v, out = [UInt8]()
        while v >= 0x80 { out.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
        out.append(UInt8(v))
        return out
    }
    static func str(_ s: String) -> [UInt8] { varint(UInt64(s.utf8.count)) + Array(s.utf8) }
    static func lp(_ b: [UInt8]) -> [UInt8] { varint(UInt64(b.count)) + b }
    static func node(_ n: NodeID) -> [UInt8] {
        (0..<8).reversed().map { UInt8(truncatingIfNeeded: n.high >> (8 * UInt64($0))) }
            + (0..<8).reversed().map { UInt8(truncatingIfNeeded: n.low >> (8 * UInt64($0))) }
    }
    static func u64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
    static func u32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }
    static func hex(_ s: String) -> [UInt8] { Hex.bytes(s)! }

    /// A headed vector entry: node, timestamp, head state.
    static func entry(_ n: NodeID, _ h: UInt64, _ state: UInt8) -> [UInt8] { node(n) + u64(h) + [state] }

    /// One-entry headed vector of node A saved at `SpecFixtures.hlc(0)`.
    static let oneWriter: [UInt8] = [1] + entry(SpecFixtures.a, SpecFixtures.hlc(0).rawValue, 1)

    /// A record: flags, type, name, zone "z" owned by "o", a vector, creation stamp, parent, fields, extensions.
    static func record(
        flags: UInt8 = 0, type: String = "Note", name: [UInt8] = str("n"), zone: [UInt8] = str("z") + str("o"),
        vector: [UInt8] = oneWriter, creation: [UInt8]? = nil, parent: [UInt8] = [],
        fieldCount: [UInt8]? = nil, fields: [[UInt8]] = [], extensions: [UInt8] = []
    ) -> [UInt8] {
        let stamp = creation ?? (vector == [0] ? [] : [0, 0])
        return [flags] + str(type) + name + zone + vector + stamp + parent
            + (fieldCount ?? varint(UInt64(fields.count))) + fields.flatMap { $0 } + extensions
    }

    /// An unsaved record (empty vector, no creation stamp).
    static func unsaved(flags: UInt8 = 0, type: String = "Note", fields: [[UInt8]] = [], extensions: [UInt8] = [])
        -> [UInt8]
    {
        record(flags: flags, type: type, vector: [0], fields: fields, extensions: extensions)
    }

    /// A field slot: name, tag, then the rest (stamp and payload) as given.
    static func field(_ name: String, _ tag: UInt8, _ rest: [UInt8] = []) -> [UInt8] { str(name) + [tag] + rest }

    /// A delta header without system fields.
    static func delta(
        flags: UInt8 = 0, baseTag: UInt32 = 0xDEADBEEF, system: [UInt8] = [], opCount: [UInt8]? = nil,
        ops: [[UInt8]] = []
    ) -> [UInt8] {
        [flags] + u32(baseTag) + system + (opCount ?? varint(UInt64(ops.count))) + ops.flatMap { $0 }
    }

    /// Delta system fields: type, parent flag, headed vector, creation stamp, extension flag.
    static let system: [UInt8] = str("Note") + [0] + oneWriter + [0, 0] + [0]

    static func tombstone(
        type: String = "Note", name: [UInt8] = str("n"), vector: [UInt8]? = nil, deletion: [UInt8] = [0, 0]
    ) -> [UInt8] {
        str(type) + name + str("z") + str("o")
            + (vector ?? ([1] + node(SpecFixtures.a) + u64(SpecFixtures.hlc(0).rawValue))) + deletion
    }

    static func token(
        magic: [UInt8] = [0x53, 0x54, 0x01], kind: UInt8 = 1, vector: [UInt8] = [0], cursor: [UInt8] = [0]
    ) -> [UInt8] {
        magic + [kind] + node(SpecFixtures.c) + vector + cursor
    }
}

/// The vectors, by file.
enum SpecVectorCases {
    typealias F = SpecFixtures

    // MARK: values.json

    static func values(_ b: inout VectorBuilder) {
        let z = F.zone
        // Strings
        b.value("string empty", .string(""))
        b.value("string ascii", .string("hello"))
        b.value("string latin and cjk", .string("Zürich 日本語"))
        b.value("string emoji", .string("🐟"))
        b.value("string emoji zwj sequence", .string("👩‍👩‍👧 🏳️‍🌈"))
        b.value("string combining mark (NFD)", .string("cafe\u{301}"))
        b.value("string precomposed (NFC)", .string("caf\u{E9}"))
        b.value("string with NUL and newline", .string("a\u{0}b\nc"))
        b.value("string 127 bytes (one-byte length)", .string(String(repeating: "x", count: 127)))
        b.value("string 128 bytes (two-byte length)", .string(String(repeating: "x", count: 128)))
        b.value("string supplementary plane", .string("𝄞𐍈"))
        // Integers
        for (name, v) in [
            ("0", 0), ("1", 1), ("-1", -1), ("63", 63), ("-64", -64), ("64", 64), ("-65", -65), ("300", 300),
            ("2^31", 1 << 31), ("max", Int64.max), ("min", Int64.min), ("min+1", Int64.min + 1)
        ] as [(String, Int64)] {
            b.value("int64 \(name)", .int64(v))
        }
        // Doubles
        for (name, v) in [
            ("0", 0.0), ("-0", -0.0), ("1.5", 1.5), ("-2.25", -2.25), ("pi", Double.pi), ("0.1", 0.1),
            ("NaN", .nan), ("+infinity", .infinity), ("-infinity", -.infinity),
            ("smallest subnormal", .leastNonzeroMagnitude), ("smallest normal", .leastNormalMagnitude),
            ("largest finite", .greatestFiniteMagnitude), ("-largest finite", -.greatestFiniteMagnitude)
        ] as [(String, Double)] {
            b.value("double \(name)", .double(v))
        }
        b.value("bool false", .bool(false))
        b.value("bool true", .bool(true))
        b.value("bytes empty", .bytes([]))
        b.value("bytes three", .bytes([0x00, 0x01, 0xFF]))
        b.value("bytes 200", .bytes((0..<200).map { UInt8($0) }))
        for (name, v) in [
            ("epoch", 0), ("2026-11-19", Int64(F.ms)), ("before epoch", -1), ("1969-07-20T20:17:40Z", -14_182_940_000),
            ("max", Int64.max), ("min", Int64.min)
        ] as [(String, Int64)] {
            b.value("date \(name)", .date(Timestamp(millisecondsSince1970: v)))
        }
        // References
        b.value("reference same zone", .reference(Reference(recordID: Record.ID(name: "note-1", zone: z))))
        b.value(
            "reference same zone deleteSelf",
            .reference(Reference(recordID: Record.ID(name: "note-1", zone: z), action: .deleteSelf)))
        b.value(
            "reference other zone, other owner", .reference(Reference(recordID: Record.ID(name: "old", zone: F.other))))
        b.value(
            "reference other zone deleteSelf",
            .reference(Reference(recordID: Record.ID(name: "old", zone: F.other), action: .deleteSelf)))
        b.value(
            "reference same zone name, other owner",
            .reference(Reference(recordID: Record.ID(name: "n", zone: RecordZone.ID(name: "notes", owner: "bob")))))
        b.value(
            "reference other zone name, default owner",
            .reference(Reference(recordID: Record.ID(name: "n", zone: RecordZone.ID(name: "inbox")))))
        b.value("reference unicode record name", .reference(Reference(recordID: Record.ID(name: "🐟-ré", zone: z))))
        b.value(
            "reference from a zone with an explicit owner",
            .reference(Reference(recordID: Record.ID(name: "x", zone: F.other))), zone: F.other)
        // Assets
        b.value("asset empty content", .asset(Asset(hash: F.hash, size: 0)))
        b.value("asset 5 MB", .asset(Asset(hash: F.hash2, size: 5_000_000)))
        b.value("asset max size", .asset(Asset(hash: F.hash2, size: Int64.max)))
        // Locations
        b.value("location latitude and longitude only", .location(Location(latitude: 52.52, longitude: 13.405)))
        b.value(
            "location every part",
            .location(
                Location(
                    latitude: -33.8568, longitude: 151.2153, altitude: 58.5, horizontalAccuracy: 5,
                    verticalAccuracy: 3, course: 271.25, speed: 1.4,
                    timestamp: Timestamp(millisecondsSince1970: Int64(F.ms)))))
        b.value(
            "location altitude and timestamp",
            .location(
                Location(
                    latitude: 0, longitude: 0, altitude: -10.5,
                    timestamp: Timestamp(millisecondsSince1970: -1))))
        b.value(
            "location accuracy, course and speed",
            .location(
                Location(
                    latitude: 90, longitude: -180, horizontalAccuracy: 65,
                    course: 0, speed: 0)))
        b.value(
            "location edge doubles", .location(Location(latitude: -0.0, longitude: .nan, verticalAccuracy: .infinity)))
        // Lists
        b.value("list of string empty", .list(.string([])))
        b.value("list of int64 empty", .list(.int64([])))
        b.value("list of location empty", .list(.location([])))
        b.value("list of string", .list(.string(["work", "", "🐟", "cafe\u{301}"])))
        b.value("list of int64", .list(.int64([0, -1, 1, .max, .min])))
        b.value("list of double", .list(.double([0, -0.0, .nan, .infinity, -.infinity, 1e-300])))
        b.value("list of bool", .list(.bool([true, false, true])))
        b.value("list of bytes", .list(.bytes([[], [0xAB], [0, 0, 0]])))
        b.value(
            "list of date",
            .list(.date([Timestamp(millisecondsSince1970: 0), Timestamp(millisecondsSince1970: Int64(F.ms))])))
        b.value(
            "list of reference, inside and outside the zone",
            .list(
                .reference([
                    Reference(recordID: Record.ID(name: "a", zone: z)),
                    Reference(recordID: Record.ID(name: "b", zone: F.other), action: .deleteSelf),
                    Reference(recordID: Record.ID(name: "c", zone: z), action: .deleteSelf)
                ])))
        b.value("list of asset", .list(.asset([Asset(hash: F.hash, size: 0), Asset(hash: F.hash2, size: 1 << 40)])))
        b.value(
            "list of location",
            .list(
                .location([
                    Location(latitude: 1, longitude: 2),
                    Location(latitude: 3, longitude: 4, speed: 5, timestamp: Timestamp(millisecondsSince1970: 6))
                ])))
        b.value("list of 200 int64 (two-byte count)", .list(.int64((0..<200).map { Int64($0) })))
    }

    // MARK: records.json

    static func saved(
        _ type: String = "Note", name: String = "note-1", zone: RecordZone.ID = F.zone, parent: Reference? = nil,
        creation: Dot, vector: [(NodeID, HLC)], heads: [Record.Head], fields: [Record.Field],
        extensions: [Record.Extension] = []
    ) -> Record {
        Record(
            recordType: type, id: Record.ID(name: name, zone: zone), parent: parent, creation: creation,
            versionVector: VersionVector(vector), heads: heads, fields: fields, extensions: extensions)
    }

    static func records(_ b: inout VectorBuilder) {
        let z = F.zone
        let id = Record.ID(name: "note-1", zone: z)
        b.record("unsaved, no fields", Record(recordType: "Note", id: id))

        var unsaved = Record(recordType: "Note", id: id)
        unsaved["title"] = .string("Groceries")
        unsaved["count"] = .int64(3)
        unsaved["done"] = .bool(false)
        b.record("unsaved with fields (no stamps)", unsaved)

        let d0 = F.dot(F.a, 0)
        b.record(
            "saved by one node",
            saved(
                creation: d0, vector: [(F.a, d0.hlc)], heads: [.init(node: F.a, isDeletion: false)],
                fields: [
                    .init(name: "done", value: .bool(true), stamp: d0),
                    .init(name: "title", value: .string("Groceries"), stamp: d0)
                ]))

        var every = [Record.Field]()
        let values: [(String, FieldValue)] = [
            ("aString", .string("Zürich 🐟")), ("bInt", .int64(-42)), ("cDouble", .double(-0.0)), ("dBool", .bool(true)),
            ("eBytes", .bytes([1, 2, 3])), ("fDate", .date(Timestamp(millisecondsSince1970: Int64(F.ms)))),
            ("gRefIn", .reference(Reference(recordID: Record.ID(name: "note-2", zone: z), action: .deleteSelf))),
            ("hRefOut", .reference(Reference(recordID: Record.ID(name: "old", zone: F.other)))),
            ("iAsset", .asset(Asset(hash: F.hash2, size: 1234))),
            (
                "jLocation",
                .location(
                    Location(
                        latitude: 48.8584, longitude: 2.2945, altitude: 330,
                        timestamp: Timestamp(millisecondsSince1970: 1)))
            ),
            ("kTags", .list(.string(["home", "urgent"]))), ("lEmpty", .list(.double([]))),
            (
                "mRefs",
                .list(
                    .reference([
                        Reference(recordID: Record.ID(name: "a", zone: z)),
                        Reference(recordID: Record.ID(name: "b", zone: F.other))
                    ]))
            )
        ]
        for (n, v) in values { every.append(.init(name: n, value: v, stamp: d0)) }
        b.record(
            "every field type",
            saved(creation: d0, vector: [(F.a, d0.hlc)], heads: [.init(node: F.a, isDeletion: false)], fields: every))

        // Several writers: A created, B and C edited later; B and C are concurrent heads.
        let ca = F.dot(F.a, 0), cb = F.dot(F.b, 5_000, 1), cc = F.dot(F.c, 7_000)
        b.record(
            "three writers, two concurrent save heads",
            saved(
                creation: ca, vector: [(F.a, ca.hlc), (F.b, cb.hlc), (F.c, cc.hlc)],
                heads: [.init(node: F.b, isDeletion: false), .init(node: F.c, isDeletion: false)],
                fields: [
                    .init(name: "body", value: .string("draft 2"), stamp: cb),
                    .init(name: "title", value: .string("Plan"), stamp: cc),
                    .init(name: "version", value: .int64(2), stamp: ca)
                ]))
        b.record(
            "stamps below their node's entry",
            saved(
                creation: F.dot(F.a, 0), vector: [(F.a, F.hlc(9_000)), (F.b, F.hlc(100))],
                heads: [.init(node: F.a, isDeletion: false)],
                fields: [
                    .init(name: "a", value: .int64(1), stamp: F.dot(F.a, 1_000)),
                    .init(name: "b", value: .int64(2), stamp: F.dot(F.b, 100)),
                    .init(name: "c", value: .int64(3), stamp: F.dot(F.a, 9_000)),
                    .init(name: "d", value: .int64(4), stamp: Dot(node: F.b, hlc: HLC(rawValue: 1)))
                ]))
        b.record(
            "deleted by one node, concurrently saved by another",
            saved(
                creation: ca, vector: [(F.a, F.hlc(3_000)), (F.b, F.hlc(4_000))],
                heads: [.init(node: F.a, isDeletion: true), .init(node: F.b, isDeletion: false)],
                fields: [.init(name: "title", value: .string("kept"), stamp: F.dot(F.b, 4_000))]))
        b.record(
            "deleted (every head a deletion)",
            saved(
                creation: ca, vector: [(F.a, F.hlc(3_000))], heads: [.init(node: F.a, isDeletion: true)],
                fields: [.init(name: "title", value: .string("gone"), stamp: ca)]))
        b.record(
            "removed-field markers, stamped and unsaved",
            saved(
                creation: ca, vector: [(F.a, F.hlc(2_000))], heads: [.init(node: F.a, isDeletion: false)],
                fields: [
                    .init(name: "archived", value: nil, stamp: F.dot(F.a, 2_000)),
                    .init(name: "color", value: nil, stamp: nil),
                    .init(name: "title", value: .string("edited locally"), stamp: nil),
                    .init(name: "zeta", value: .bool(false), stamp: ca)
                ]))
        // Concurrent slots (wire-format §6.3): a merge kept side by side the writes of a field
        // that neither writer had seen; they repeat the name, each stamped, the later stamp first.
        let sa = F.dot(F.a, 3_000), sb = F.dot(F.b, 5_000)
        let twoHeads: [Record.Head] = [.init(node: F.a, isDeletion: false), .init(node: F.b, isDeletion: false)]
        b.record(
            "concurrent slots: two values of one field",
            saved(
                creation: ca, vector: [(F.a, sa.hlc), (F.b, sb.hlc)], heads: twoHeads,
                fields: [
                    .init(name: "body", value: .string("draft"), stamp: ca),
                    .init(name: "title", value: .string("Plan B"), stamp: sb),
                    .init(name: "title", value: .string("Plan A"), stamp: sa),
                    .init(name: "version", value: .int64(1), stamp: ca)
                ]))
        b.record(
            "concurrent slots: a removed-field marker and a value",
            saved(
                creation: ca, vector: [(F.a, sa.hlc), (F.b, sb.hlc)], heads: twoHeads,
                fields: [
                    .init(name: "color", value: nil, stamp: sb),
                    .init(name: "color", value: .string("red"), stamp: sa),
                    .init(name: "title", value: .string("Plan"), stamp: ca)
                ]))
        // At one timestamp the dot order falls to the node ID: C's slot before A's.
        let ta = F.dot(F.a, 2_000), tc = F.dot(F.c, 2_000)
        b.record(
            "concurrent slots at one timestamp, the larger node first",
            saved(
                creation: ca, vector: [(F.a, ta.hlc), (F.c, tc.hlc)],
                heads: [.init(node: F.a, isDeletion: false), .init(node: F.c, isDeletion: false)],
                fields: [
                    .init(name: "title", value: .string("from C"), stamp: tc),
                    .init(name: "title", value: .string("from A"), stamp: ta)
                ]))
        b.record(
            "parent in the same zone",
            saved(
                parent: Reference(recordID: Record.ID(name: "folder-1", zone: z)),
                creation: ca, vector: [(F.a, ca.hlc)], heads: [.init(node: F.a, isDeletion: false)], fields: []))
        b.record(
            "parent in another zone, deleteSelf",
            saved(
                parent: Reference(recordID: Record.ID(name: "folder-9", zone: F.other), action: .deleteSelf),
                creation: ca, vector: [(F.a, ca.hlc)], heads: [.init(node: F.a, isDeletion: false)], fields: []))
        var unsavedParent = Record(recordType: "Folder", id: Record.ID(name: "sub", zone: F.other))
        unsavedParent.parent = Reference(recordID: Record.ID(name: "root", zone: F.other))
        b.record("unsaved with parent, zone with owner", unsavedParent)
        b.record(
            "unknown optional extensions preserved",
            saved(
                creation: ca, vector: [(F.a, ca.hlc)], heads: [.init(node: F.a, isDeletion: false)],
                fields: [.init(name: "title", value: .string("x"), stamp: ca)],
                extensions: [
                    .init(tag: 1, bytes: []), .init(tag: 3, bytes: [0xCA, 0xFE]),
                    .init(tag: 1_000_001, bytes: Array("future".utf8))
                ]))
        var unsavedExt = Record(recordType: "Note", id: id)
        unsavedExt.extensions = [.init(tag: 127, bytes: [0]), .init(tag: 129, bytes: [1])]
        b.record("unsaved with extensions (tag 129 two-byte varint)", unsavedExt)

        // Names at the limits.
        let type255 = "T" + String(repeating: "a", count: 253) + "_"
        let name255 = String(repeating: "é", count: 127) + "x"  // 127×2 + 1 = 255 bytes
        let zone255 = String(repeating: "z", count: 255)
        let owner255 = String(repeating: "🐟", count: 63) + "abc"  // 63×4 + 3 = 255 bytes
        let field255 = "f" + String(repeating: "0", count: 254)
        var maxNames = Record(
            recordType: type255, id: Record.ID(name: name255, zone: RecordZone.ID(name: zone255, owner: owner255)))
        maxNames[field255] = .string("long names")
        b.record("names at 255 bytes", maxNames)
        var shortNames = Record(recordType: "N", id: Record.ID(name: "x", zone: RecordZone.ID(name: "z", owner: "o")))
        shortNames["a"] = .int64(0)
        shortNames["A"] = .int64(1)
        shortNames["Z9_"] = .int64(2)
        b.record("one-byte names; field order is by bytes (A < Z9_ < a)", shortNames)
        b.record(
            "unicode record and zone names",
            Record(
                recordType: "Note",
                id: Record.ID(name: "🐟 naïve\u{0301}", zone: RecordZone.ID(name: "日本語", owner: "Zoë"))))

        // The canonically-equivalent zone bug: NFC record zone, reference into the NFD zone.
        var nfc = Record(recordType: "Note", id: Record.ID(name: "n", zone: RecordZone.ID(name: "caf\u{E9}")))
        nfc["link"] = .reference(Reference(recordID: Record.ID(name: "t", zone: RecordZone.ID(name: "cafe\u{301}"))))
        nfc["same"] = .reference(Reference(recordID: Record.ID(name: "t", zone: RecordZone.ID(name: "caf\u{E9}"))))
        b.record("reference into a canonically equivalent but byte-different zone", nfc)

        let corpus = NotesCorpus.records(count: 3)
        for (i, r) in corpus.enumerated() { b.record("notes corpus record \(i)", r) }
    }

    // MARK: deltas.json

    static func deltas(_ b: inout VectorBuilder) {
        let z = F.zone
        let d1 = F.dot(F.a, 1_000), d2 = F.dot(F.b, 2_000)
        let sys1 = RecordDelta.SystemFields(
            recordType: "Note", parent: nil, creation: F.dot(F.a, 0), versionVector: VersionVector([(F.a, d1.hlc)]),
            heads: [.init(node: F.a, isDeletion: false)], extensions: [])
        let sys2 = RecordDelta.SystemFields(
            recordType: "Note", parent: nil, creation: F.dot(F.a, 0),
            versionVector: VersionVector([(F.a, d1.hlc), (F.b, d2.hlc)]),
            heads: [.init(node: F.a, isDeletion: false), .init(node: F.b, isDeletion: false)], extensions: [])
        b.delta("empty", RecordDelta(baseTag: 0))
        b.delta("system fields only", RecordDelta(baseTag: 0x1234_5678, system: sys1))
        b.delta(
            "set, stamped",
            RecordDelta(
                baseTag: 0x0102_0304, system: sys1,
                operations: [
                    .set(.init(name: "title", value: .string("New title"), stamp: d1))
                ]))
        b.delta(
            "unsaved edits: set, removal marker and drop",
            RecordDelta(
                baseTag: 0xFFFF_FFFF,
                operations: [
                    .set(.init(name: "archived", value: nil, stamp: nil)),
                    .drop(name: "draft"),
                    .set(.init(name: "title", value: .string("x"), stamp: nil))
                ]))
        b.delta(
            "removed-field marker, stamped",
            RecordDelta(
                baseTag: 7, system: sys1,
                operations: [
                    .set(.init(name: "color", value: nil, stamp: d1))
                ]))
        b.delta(
            "two writers: concurrent heads and stamps of each",
            RecordDelta(
                baseTag: 9, system: sys2,
                operations: [
                    .set(.init(name: "body", value: .string("b"), stamp: d2)),
                    .set(.init(name: "title", value: .string("a"), stamp: d1))
                ]))
        // A set per concurrent slot (wire-format §7.3): the field's slots, the later stamp first.
        b.delta(
            "concurrent slots: two sets of one field",
            RecordDelta(
                baseTag: 10, system: sys2,
                operations: [
                    .set(.init(name: "title", value: .string("b"), stamp: d2)),
                    .set(.init(name: "title", value: .string("a"), stamp: d1))
                ]))
        b.delta(
            "list splices: insert, replace, delete",
            RecordDelta(
                baseTag: 11, system: sys1,
                operations: [
                    .splice(
                        name: "tags", stamp: d1,
                        edits: [
                            .init(offset: 0, deleteCount: 0, insert: .string(["first"])),
                            .init(offset: 2, deleteCount: 1, insert: .string(["third'", "fourth"])),
                            .init(offset: 5, deleteCount: 3, insert: .string([]))
                        ])
                ]))
        b.delta(
            "list splice of references, inside and outside the zone",
            RecordDelta(
                baseTag: 12,
                operations: [
                    .splice(
                        name: "links", stamp: nil,
                        edits: [
                            .init(
                                offset: 1, deleteCount: 0,
                                insert: .reference([
                                    Reference(recordID: Record.ID(name: "r", zone: z)),
                                    Reference(recordID: Record.ID(name: "s", zone: F.other), action: .deleteSelf)
                                ]))
                        ])
                ]))
        b.delta(
            "list splice pure deletion keeps its element kind",
            RecordDelta(
                baseTag: 13,
                operations: [
                    .splice(name: "scores", stamp: nil, edits: [.init(offset: 4, deleteCount: 2, insert: .int64([]))])
                ]))
        b.delta(
            "byte patches of a string",
            RecordDelta(
                baseTag: 14, system: sys1,
                operations: [
                    .patch(
                        name: "body", stamp: d1,
                        edits: [
                            .init(offset: 0, deleteCount: 0, insert: Array("Dear ".utf8)),
                            .init(offset: 10, deleteCount: 4, insert: Array("🐟".utf8)),
                            .init(offset: 200, deleteCount: 1, insert: [])
                        ])
                ]))
        b.delta(
            "byte patch of bytes, unstamped",
            RecordDelta(
                baseTag: 15,
                operations: [
                    .patch(name: "blob", stamp: nil, edits: [.init(offset: 300, deleteCount: 0, insert: [0, 0xFF])])
                ]))
        b.delta(
            "every operation kind",
            RecordDelta(
                baseTag: 16, system: sys2,
                operations: [
                    .patch(name: "body", stamp: d2, edits: [.init(offset: 1, deleteCount: 1, insert: [0x41])]),
                    .set(.init(name: "color", value: nil, stamp: d1)),
                    .drop(name: "draft"),
                    .set(
                        .init(
                            name: "place", value: .location(Location(latitude: 1, longitude: 2, course: 90)), stamp: d2)
                    ),
                    .splice(name: "tags", stamp: d1, edits: [.init(offset: 0, deleteCount: 1, insert: .string(["x"]))])
                ]))
        b.delta(
            "system fields with parent, deletion head and extensions",
            RecordDelta(
                baseTag: 17,
                system: .init(
                    recordType: "Task", parent: Reference(recordID: Record.ID(name: "project", zone: z)),
                    creation: F.dot(F.a, 0),
                    versionVector: VersionVector([(F.a, d1.hlc), (F.b, d2.hlc), (F.c, F.hlc(3_000))]),
                    heads: [.init(node: F.b, isDeletion: true), .init(node: F.c, isDeletion: false)],
                    extensions: [.init(tag: 5, bytes: [9, 9])])))
        b.delta(
            "system fields with parent in another zone",
            RecordDelta(
                baseTag: 18,
                system: .init(
                    recordType: "Task",
                    parent: Reference(recordID: Record.ID(name: "p", zone: F.other), action: .deleteSelf),
                    creation: F.dot(F.a, 0),
                    versionVector: VersionVector([(F.a, d1.hlc)]), heads: [.init(node: F.a, isDeletion: false)],
                    extensions: [])))
        b.delta(
            "delta of a record in a zone with an owner",
            RecordDelta(
                baseTag: 19,
                operations: [
                    .set(
                        .init(
                            name: "link", value: .reference(Reference(recordID: Record.ID(name: "x", zone: F.other))),
                            stamp: nil)),
                    .set(
                        .init(
                            name: "other", value: .reference(Reference(recordID: Record.ID(name: "y", zone: z))),
                            stamp: nil))
                ]), zone: F.other)
    }

    // MARK: tombstones.json

    static func tombstones(_ b: inout VectorBuilder) {
        let z = F.zone
        b.tombstone(
            "deleted by its only writer",
            Tombstone(
                id: Record.ID(name: "note-1", zone: z), recordType: "Note",
                versionVector: VersionVector([(F.a, F.hlc(1_000))]), deletion: F.dot(F.a, 1_000)))
        b.tombstone(
            "deleted by the second of three writers",
            Tombstone(
                id: Record.ID(name: "note-2", zone: z), recordType: "Note",
                versionVector: VersionVector([(F.a, F.hlc(1_000)), (F.b, F.hlc(9_000, 3)), (F.c, F.hlc(2_000))]),
                deletion: F.dot(F.b, 9_000, 3)))
        b.tombstone(
            "deletion below its node's entry",
            Tombstone(
                id: Record.ID(name: "x", zone: F.other), recordType: "Task",
                versionVector: VersionVector([(F.c, F.hlc(5_000))]), deletion: F.dot(F.c, 4_000)))
        b.tombstone(
            "unicode names",
            Tombstone(
                id: Record.ID(name: "🐟 cafe\u{301}", zone: RecordZone.ID(name: "日本語", owner: "Zoë")),
                recordType: "Note", versionVector: VersionVector([(F.a, HLC(rawValue: 1))]),
                deletion: Dot(node: F.a, hlc: HLC(rawValue: 1))))
        var r = NotesCorpus.records(count: 1)[0]
        r = Record(
            recordType: r.recordType, id: r.id, parent: nil, creation: r.creation, versionVector: r.versionVector,
            heads: r.heads.map { .init(node: $0.node, isDeletion: true) }, fields: r.fields, extensions: [])
        if let t = Tombstone(r) { b.tombstone("tombstone of notes corpus record 0", t) }
    }

    // MARK: tokens.json

    static func tokens(_ b: inout VectorBuilder) {
        let inc = NodeID(high: 0x5EED_0000_0000_0001, low: 0xFEED_FACE_CAFE_BEEF)
        b.token("zone token, empty vector, no cursor", .init(kind: .zone, incarnation: inc, vector: VersionVector()))
        b.token("zone token, one entry", .init(kind: .zone, incarnation: inc, vector: VersionVector([(F.a, F.hlc(0))])))
        b.token(
            "zone token, three entries",
            .init(
                kind: .zone, incarnation: inc,
                vector: VersionVector([(F.a, F.hlc(1)), (F.b, F.hlc(2, 7)), (F.c, HLC(rawValue: .max))])))
        b.token(
            "zone token with cursor",
            .init(
                kind: .zone, incarnation: inc, vector: VersionVector([(F.a, F.hlc(0))]),
                cursor: .init(source: F.b, sequence: 1_000)))
        b.token(
            "database token, cursor at sequence 0",
            .init(
                kind: .database, incarnation: inc, vector: VersionVector(),
                cursor: .init(source: F.c, sequence: 0)))
        b.token(
            "database token, cursor at max sequence",
            .init(
                kind: .database, incarnation: NodeID(high: 0, low: 0),
                vector: VersionVector([(F.c, F.hlc(5))]),
                cursor: .init(source: F.a, sequence: .max)))
    }
}
