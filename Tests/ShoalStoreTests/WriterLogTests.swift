// WriterLogTests: slot digests and the writer chain match an independent computation, and an entry records exactly what its write stamped.

import Testing
import ShoalSamples
@testable import ShoalStore
@testable import ShoalWire

/// The digests and chain values below were computed with Python's hashlib from
/// Spec/authenticated-writes.md §2 alone.
@Suite struct WriterLogTests {
    static let zone = RecordZone.ID(name: "notes")
    static let writer = NodeID(high: 0x0A11_CE00_0000_0001, low: 0x1111_1111_1111_1111)

    /// Value bytes of at most 15 bytes are their own digest; longer ones are hashed with the name.
    @Test func slotDigestsMatchTheSpec() {
        #expect(Hex.string(WriterLog.slotDigest(name: "title", value: .string("Hi"), zone: Self.zone)) == "0101024869")
        #expect(Hex.string(WriterLog.slotDigest(name: "gone", value: nil, zone: Self.zone)) == "00")
        #expect(
            Hex.string(WriterLog.systemDigest(recordType: "Note", parent: nil, zone: Self.zone)) == "01044e6f746500")
        let long = FieldValue.string("Hello, authenticated world")
        #expect(
            Hex.string(WriterLog.slotDigest(name: "title", value: long, zone: Self.zone))
                == "cc4d466fcc7a4f78b346cd2b89230d6a")
        #expect(
            WriterLog.slotDigest(name: "title", value: .string("Hi!"), zone: Self.zone)
                != WriterLog.slotDigest(name: "title", value: .string("Hi"), zone: Self.zone))
        #expect(
            WriterLog.slotDigest(name: "titles", value: long, zone: Self.zone)
                != WriterLog.slotDigest(name: "title", value: long, zone: Self.zone), "the name is covered")
        // The longest inline value (15 bytes: presence, tag, length, 12 characters) and the
        // shortest hashed one.
        #expect(WriterLog.slotDigest(name: "t", value: .string("123456789012"), zone: Self.zone).count == 15)
        #expect(
            WriterLog.slotDigest(name: "t", value: .string("1234567890123"), zone: Self.zone).count
                == WriteEntry.digestBytes)
    }

    @Test func theChainMatchesTheSpec() throws {
        let start = WriterLog.chainStart(zone: Self.zone, writer: Self.writer)
        #expect(Hex.string(start) == "44883f0d2ba50921c9c3b6497386213a1c6d911cef423579a0ca9ad227dad916")
        let entry = try WriteEntry(
            decoding: Hex.bytes("01010000008c01000002026e3102000701044e6f746500057469746c65050101024869") ?? [])
        #expect(
            Hex.string(WriterLog.chain(start, entry))
                == "888db9e332c7d5bc8c651623a2467dd49040c3e7df79f4d915956012c66bf711")
        #expect(WriterLog.chain(from: start, after: (0, .zero), [entry]) == WriterLog.chain(start, entry))
        let hashed = try WriteEntry(
            decoding: Hex.bytes(
                "01010000008c01000002026e3102000701044e6f746500057469746c6510cc4d466fcc7a4f78b346cd2b89230d6a") ?? [])
        #expect(
            Hex.string(WriterLog.chain(start, hashed))
                == "6469867a70387359b5a6b36e176ddb4c69ea8c97f182e10c7cd87e4af037f8ef")
    }

    /// A digest of 0 or more than 16 bytes is refused where it is read.
    @Test func digestLengthsOutsideOneToSixteenAreRefused() {
        for bad in ["00", "11"] {
            let hex = "01010000008c01000002026e310100" + bad + String(repeating: "ab", count: bad == "00" ? 0 : 17)
            #expect(throws: WireError.self) { try WriteEntry(decoding: Hex.bytes(hex) ?? []) }
        }
    }

    /// A gap, a repeat or a timestamp that does not increase breaks the chain: nil.
    @Test func entriesThatDoNotFollowWithoutAGapBreakTheChain() {
        let start = WriterLog.chainStart(zone: Self.zone, writer: Self.writer)
        func e(_ s: UInt64, _ t: UInt64) -> WriteEntry {
            WriteEntry(sequence: s, hlc: HLC(rawValue: t), record: "r", slots: [])
        }
        #expect(WriterLog.chain(from: start, after: (0, .zero), [e(1, 10), e(2, 20), e(3, 30)]) != nil)
        #expect(WriterLog.chain(from: start, after: (0, .zero), [e(1, 10), e(3, 30)]) == nil, "a gap")
        #expect(WriterLog.chain(from: start, after: (0, .zero), [e(1, 10), e(1, 10)]) == nil, "a repeat")
        #expect(
            WriterLog.chain(from: start, after: (0, .zero), [e(1, 10), e(2, 10)]) == nil,
            "a timestamp that does not increase")
        #expect(
            WriterLog.chain(from: start, after: (5, HLC(rawValue: 50)), [e(6, 60)]) != nil,
            "a range after a held prefix")
        #expect(WriterLog.chain(from: start, after: (5, HLC(rawValue: 50)), [e(7, 60)]) == nil)
    }

    /// The entry of a save lists the system slot and exactly the slots the save stamped; a
    /// deletion's entry lists none; a first save is a creation.
    /// An entry written straight from a version is byte for byte the entry built and encoded,
    /// for every dot of seeded random versions (heads, deletions, creations, slots stamped by
    /// other writes, inline and hashed digests, type and parent); so is the rest of it without
    /// the sequence, numbered afterwards.
    @Test(arguments: [11, 12, 13] as [UInt64]) func entriesWrittenFromVersionsAreTheEncodedEntries(seed: UInt64) {
        var gen = RandomRecords(seed: seed)
        var checked = 0
        for _ in 0..<300 {
            let r = gen.record()
            var dots = Set(r.versionVector.entries.map { Dot(node: $0.node, hlc: $0.hlc) })
            for f in r.fields { if let s = f.stamp { dots.insert(s) } }
            for (i, dot) in dots.enumerated() {
                let sequence = UInt64(1) << (i * 9 % 64)
                let expected = WriterLog.entry(of: r, dot: dot, sequence: sequence).encoded()
                #expect(
                    WriterLog.encodedEntry(of: r, dot: dot, sequence: sequence) == expected,
                    "seed \(seed): \(r.id) at \(dot)")
                let tail = WriterLog.encodedEntry(of: r, dot: dot, sequence: nil)
                #expect(
                    WriterLog.encodedEntry(sequence: sequence, tail: tail) == expected,
                    "seed \(seed): \(r.id) at \(dot), numbered later")
                checked += 1
            }
        }
        #expect(checked > 300, "seed \(seed): the versions named too few writes")
    }

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
