// WriterLogTests: slot digests and the writer chain match an independent computation, and an entry records exactly what its write stamped.

import Testing
@testable import ShoalStore
@testable import ShoalWire

/// The digests and chain values below were computed with Python's hashlib from
/// Spec/authenticated-writes.md §2 alone.
@Suite struct WriterLogTests {
    static let zone = RecordZone.ID(name: "notes")
    static let writer = NodeID(high: 0x0A11_CE00_0000_0001, low: 0x1111_1111_1111_1111)

    @Test func slotDigestsMatchTheSpec() {
        #expect(Hex.string(WriterLog.slotDigest(name: "title", value: .string("Hi"), zone: Self.zone)) == "c7a82ca671ddf41adb74a60667e4eee7")
        #expect(Hex.string(WriterLog.slotDigest(name: "gone", value: nil, zone: Self.zone)) == "741a88539df51c2b94bee9c78c0d28e9")
        #expect(Hex.string(WriterLog.systemDigest(recordType: "Note", parent: nil, zone: Self.zone)) == "73b6131e660a75a6061da4d44a09505c")
        #expect(WriterLog.slotDigest(name: "title", value: .string("Hi!"), zone: Self.zone)
                != WriterLog.slotDigest(name: "title", value: .string("Hi"), zone: Self.zone))
        #expect(WriterLog.slotDigest(name: "titles", value: .string("Hi"), zone: Self.zone)
                != WriterLog.slotDigest(name: "title", value: .string("Hi"), zone: Self.zone), "the name is covered")
    }

    @Test func theChainMatchesTheSpec() throws {
        let start = WriterLog.chainStart(zone: Self.zone, writer: Self.writer)
        #expect(Hex.string(start) == "44883f0d2ba50921c9c3b6497386213a1c6d911cef423579a0ca9ad227dad916")
        let entry = try WriteEntry(decoding: Hex.bytes("01010000008c01000002026e31020073b6131e660a75a6061da4d44a09505c057469746c65c7a82ca671ddf41adb74a60667e4eee7") ?? [])
        #expect(Hex.string(WriterLog.chain(start, entry)) == "3665ac24e8988cdbed76dfb0a48a34508c3fff08a6795705b94c06edd488b5e1")
        #expect(WriterLog.chain(from: start, after: (0, .zero), [entry]) == WriterLog.chain(start, entry))
    }

    /// A gap, a repeat or a timestamp that does not increase breaks the chain: nil.
    @Test func entriesThatDoNotFollowWithoutAGapBreakTheChain() {
        let start = WriterLog.chainStart(zone: Self.zone, writer: Self.writer)
        func e(_ s: UInt64, _ t: UInt64) -> WriteEntry { WriteEntry(sequence: s, hlc: HLC(rawValue: t), record: "r", slots: []) }
        #expect(WriterLog.chain(from: start, after: (0, .zero), [e(1, 10), e(2, 20), e(3, 30)]) != nil)
        #expect(WriterLog.chain(from: start, after: (0, .zero), [e(1, 10), e(3, 30)]) == nil, "a gap")
        #expect(WriterLog.chain(from: start, after: (0, .zero), [e(1, 10), e(1, 10)]) == nil, "a repeat")
        #expect(WriterLog.chain(from: start, after: (0, .zero), [e(1, 10), e(2, 10)]) == nil, "a timestamp that does not increase")
        #expect(WriterLog.chain(from: start, after: (5, HLC(rawValue: 50)), [e(6, 60)]) != nil, "a range after a held prefix")
        #expect(WriterLog.chain(from: start, after: (5, HLC(rawValue: 50)), [e(7, 60)]) == nil)
    }

    /// The entry of a save lists the system slot and exactly the slots the save stamped; a
    /// deletion's entry lists none; a first save is a creation.
    @Test func anEntryRecordsWhatItsWriteStamped() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        var r = note("n1", "first")
        r["body"] = .string("text")
        let first = try await store.save(r)
        let node = store.nodeID
        let firstDot = Dot(node: node, hlc: first.versionVector[node])
        let e1 = WriterLog.entry(of: first, dot: firstDot, sequence: 1)
        #expect(e1.isCreation && !e1.isDeletion)
        #expect(e1.slots.map(\.name) == ["", "body", "title"])
        #expect(e1.slots[2].digest == WriterLog.slotDigest(name: "title", value: .string("first"), zone: notes))

        var edit = first
        edit["title"] = .string("second")
        let second = try await store.save(edit)
        let e2 = WriterLog.entry(of: second, dot: Dot(node: node, hlc: second.versionVector[node]), sequence: 2)
        #expect(!e2.isCreation)
        #expect(e2.slots.map(\.name) == ["", "title"], "the body the save left alone keeps the first write's stamp")

        try await store.delete(first.id)
        let tombstone = try #require(try await store.changes(in: notes, since: nil).records.first { $0.id == first.id })
        let e3 = WriterLog.entry(of: tombstone, dot: Dot(node: node, hlc: tombstone.versionVector[node]), sequence: 3)
        #expect(e3.isDeletion && e3.slots.isEmpty)
    }
}
