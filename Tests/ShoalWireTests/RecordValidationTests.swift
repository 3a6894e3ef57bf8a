// RecordValidationTests: a record that validates encodes faithfully; every one that would not is rejected.

import Testing
import ShoalSamples
@testable import ShoalWire

@Suite struct RecordValidationTests {
    static let zone = RecordZone.ID(name: "notes")
    static let a = NotesCorpus.nodes[0], b = NotesCorpus.nodes[1], c = NotesCorpus.nodes[2]
    static let t = HLC(rawValue: 1 << 40)

    static func record(
        creation: Dot? = Dot(node: a, hlc: t), vector: [(NodeID, HLC)] = [(a, t)],
        heads: [Record.Head] = [.init(node: a, isDeletion: false)], fields: [Record.Field] = [],
        extensions: [Record.Extension] = []
    ) -> Record {
        Record(
            recordType: "Note", id: Record.ID(name: "n", zone: zone), parent: nil, creation: creation,
            versionVector: VersionVector(vector), heads: heads, fields: fields, extensions: extensions)
    }

    /// Records the encoder cannot write faithfully: each either fails to decode or decodes to
    /// something else. `validate` must reject every one of them.
    static let unfaithful: [(String, Record)] = [
        ("saved without creation stamp", record(creation: nil)),
        ("unsaved with creation stamp", record(vector: [], heads: [])),
        ("unsaved with a head", record(creation: nil, vector: [], heads: [.init(node: a, isDeletion: false)])),
        ("creation at timestamp zero of a node outside the vector", record(creation: Dot(node: c, hlc: .zero))),
        (
            "field stamp at timestamp zero of a node outside the vector",
            record(fields: [.init(name: "x", value: .bool(true), stamp: Dot(node: c, hlc: .zero))])
        ),
        (
            "field stamp at timestamp zero",
            record(fields: [.init(name: "x", value: .bool(true), stamp: Dot(node: a, hlc: .zero))])
        ),
        (
            "head without a vector entry",
            record(heads: [.init(node: a, isDeletion: false), .init(node: b, isDeletion: true)])
        ),
        (
            "heads out of order",
            record(
                vector: [(a, t), (b, t)], heads: [.init(node: b, isDeletion: false), .init(node: a, isDeletion: false)])
        ),
        ("heads repeat a node", record(heads: [.init(node: a, isDeletion: false), .init(node: a, isDeletion: true)])),
        (
            "fields out of order",
            record(fields: [.init(name: "b", value: .int64(1)), .init(name: "a", value: .int64(2))])
        ),
        ("field twice", record(fields: [.init(name: "a", value: .int64(1)), .init(name: "a", value: .int64(2))])),
        ("even extension tag", record(extensions: [.init(tag: 2, bytes: [])])),
        ("extension tags out of order", record(extensions: [.init(tag: 3, bytes: []), .init(tag: 1, bytes: [])])),
        (
            "negative asset size",
            record(fields: [
                .init(
                    name: "f",
                    value: .asset(Asset(hash: ContentHash(bytes: [UInt8](repeating: 1, count: 32))!, size: -1)))
            ])
        ),
        (
            "negative asset size in a list",
            record(fields: [
                .init(
                    name: "f",
                    value: .list(.asset([Asset(hash: ContentHash(bytes: [UInt8](repeating: 1, count: 32))!, size: -5)]))
                )
            ])
        ),
        (
            "reference with an empty record name",
            record(fields: [.init(name: "r", value: .reference(Reference(recordID: Record.ID(name: "", zone: zone))))])
        ),
        (
            "list reference into a zone with an empty owner",
            record(fields: [
                .init(
                    name: "r",
                    value: .list(
                        .reference([
                            Reference(recordID: Record.ID(name: "x", zone: RecordZone.ID(name: "z", owner: "")))
                        ])))
            ])
        )
    ]

    @Test(arguments: unfaithful.map(\.0))
    func unfaithfulRecordIsRejected(_ name: String) throws {
        let r = try #require(Self.unfaithful.first { $0.0 == name }?.1)
        let bytes = r.encoded()
        let roundTrips = (try? Record(decoding: bytes)) == r
        #expect(!roundTrips, "the case does not exercise an unfaithful encoding")
        #expect(throws: WireError.self) { try r.validate() }
    }

    @Test func validRecordsValidate() throws {
        let (a, b, t) = (Self.a, Self.b, Self.t)
        try Self.record().validate()
        try Self.record(creation: nil, vector: [], heads: []).validate()
        try Self.record(
            vector: [(a, t), (b, t)], heads: [.init(node: a, isDeletion: false), .init(node: b, isDeletion: true)],
            fields: [
                .init(name: "A", value: nil, stamp: Dot(node: b, hlc: HLC(rawValue: 1))),
                .init(name: "a", value: .int64(1))
            ],
            extensions: [.init(tag: 1, bytes: []), .init(tag: 3, bytes: [1])]
        ).validate()
        var seedGen = RandomRecords(seed: 0x5EED_0002)
        for i in 0..<2_000 {
            let r = seedGen.record()
            do { try r.validate() } catch {
                Issue.record("random record \(i) (seed 0x5EED0002) does not validate: \(error)")
                return
            }
        }
    }
}
