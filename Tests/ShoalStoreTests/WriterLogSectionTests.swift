// WriterLogSectionTests: entries travel beside the versions that show them and are rebuilt exactly; versions that show writes no entry holds are caught.

import Testing
@testable import ShoalStore
@testable import ShoalWire
import ShoalSamples

@Suite struct WriterLogSectionTests {
    /// Two stores sharing `notes`: `a` writes n1 (title, body) and n2, `b` takes them, replaces
    /// n1's title and deletes n2, and `a` takes that back. Returns both and `a`'s own entries.
    static func history() async throws -> (a: Store, b: Store, dirs: [TempDirectory]) {
        let dirs = [TempDirectory(), TempDirectory()]
        let a = try await Store.temporary(dirs[0]), b = try await Store.temporary(dirs[1])
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        var n1 = note("n1", "title by a")
        n1["body"] = .string("body by a")
        try await a.save(n1)
        try await a.save(note("n2", "x"))
        try await a.save(note("n3", "y"))
        try await b.apply(remoteChanges: try await a.changes(in: notes, since: nil).records)
        var edit = try await b.record(for: Record.ID(name: "n1", zone: notes))
        edit["title"] = .string("title by b")
        try await b.save(edit)
        try await b.delete(Record.ID(name: "n2", zone: notes))
        try await a.apply(remoteChanges: try await b.changes(in: notes, since: nil).records)
        return (a, b, dirs)
    }

    /// A sender reads only the entries no version of the batch made: n3's version names `a`
    /// alone, so its entry is implied unread; n1 and n2 were changed by `b`, so theirs are read
    /// and compared. The items are those built from every entry read, and an unread entry no
    /// version made gives no items at all.
    @Test func entriesOfWritesTheBatchMadeAreImpliedUnread() async throws {
        let (a, b, _) = try await Self.history()
        let writer = a.nodeID
        let versions = try await b.changes(in: notes, since: nil).records
        let made = WriterLog.madeBy(writer, versions: versions)
        let n3 = try #require(versions.firstIndex { $0.id.name == "n3" })
        #expect(made.values.sorted() == [n3], "only n3's version names a alone")
        var asked = [HLC]()
        let read = try await a.entries(of: writer, in: notes, after: 0, limit: 100) { hlc in
            asked.append(hlc)
            return made[hlc] == nil
        }
        #expect(read.map { $0.entry == nil } == [false, false, true])
        #expect(asked.count == 3)
        let all = try await a.entries(of: writer, in: notes, after: 0, limit: 100)
        #expect(
            WriterLog.items(for: read, of: writer, versions: versions, made: made)
                == WriterLog.items(for: all, of: writer, versions: versions))
        let unread = read.map { (hlc: $0.hlc, entry: Optional<WriteEntry>.none) }
        #expect(WriterLog.items(for: unread, of: writer, versions: versions, made: made) == nil)
    }

    /// `a`'s entries beside `b`'s current versions: n1 shows a's write only in its body, n2's
    /// tombstone none of its slots (both partial), n3 all of it (implied); an entry whose record
    /// is not in the batch travels whole. Rebuilt, they are the entries, and the section
    /// round-trips.
    @Test func entriesTravelImpliedPartialOrWholeAndAreRebuiltExactly() async throws {
        let (a, b, _) = try await Self.history()
        let writer = a.nodeID
        let entries = try await a.entries(of: writer, in: notes, after: 0, limit: 100)
        #expect(entries.map(\.record) == ["n1", "n2", "n3"])
        let versions = try await b.changes(in: notes, since: nil).records
        let items = WriterLog.items(for: entries, of: writer, versions: versions)
        let n1 = try #require(versions.firstIndex { $0.id.name == "n1" }),
            n3 = try #require(versions.firstIndex { $0.id.name == "n3" })
        guard case .partial(let i, let hlc, let missing) = items[0] else { Issue.record("n1: \(items[0])"); return }
        #expect(
            i == n1 && hlc == entries[0].hlc && missing.map(\.name) == ["", "title"],
            "b's save replaced the title, and the type's head")
        guard case .partial(_, _, let none) = items[1] else { Issue.record("n2: \(items[1])"); return }
        #expect(none.map(\.name) == ["", "title"], "a tombstone shows no slot")
        #expect(items[2] == .implied(record: n3))
        #expect(
            WriterLog.items(for: entries, of: writer, versions: versions.filter { $0.id.name != "n2" })[1]
                == .whole(entries[1]))

        let range = WriterLogSection.Range(
            writer: writer, publicKey: [1, 2, 3], firstSequence: 1, items: items,
            seal: .init(chain: [UInt8](repeating: 3, count: 32), signature: [UInt8](repeating: 4, count: 64)))
        let section = WriterLogSection(ranges: [range])
        let bytes = section.encoded()
        #expect(try WriterLogSection(decoding: bytes, records: versions.count) == section)
        #expect(try WriterLog.entries(of: range, versions: versions).get() == entries)
        #expect(
            try WriterLog.encodedEntries(of: range, versions: versions).get()
                == entries.map(WriterLog.EncodedEntry.init))
        for (offset, item) in items.enumerated() {
            #expect(
                WriterLog.entry(for: item, sequence: UInt64(offset) + 1, writer: writer, versions: versions)
                    == entries[offset])
        }
        // Every version b holds checks out against a's entries and b's own.
        let bEntries = try await b.entries(of: b.nodeID, in: notes, after: 0, limit: 100)
        for v in versions {
            #expect(WriterLog.check(v, writer: writer) { h in entries.first { $0.hlc == h } } == nil, "\(v.id)")
            #expect(WriterLog.check(v, writer: b.nodeID) { h in bEntries.first { $0.hlc == h } } == nil, "\(v.id)")
        }
    }

    /// A range long enough to be rebuilt on two threads (``WriterLog/parallelEntries``) gives
    /// the entries one pass in order gives — implied, partial and whole items alike — and, when
    /// items do not hold up, the first mismatch in order, whichever half it lies in.
    @Test func aLongRangeIsRebuiltOnTwoThreadsAsInOnePass() throws {
        let writer = NodeID(high: 0x0a11ce, low: 7)
        let count = WriterLog.parallelEntries * 2 + 3
        var versions = [Record]()
        var entries = [WriteEntry]()
        for i in 0..<count {
            var r = Record(recordType: "Note", id: Record.ID(name: "n\(i)", zone: notes))
            r["title"] = .string("a title long enough to be hashed, number \(i)")
            r["rank"] = .int64(Int64(i))
            let v = Stamping.saved(r, by: writer, at: HLC(milliseconds: 1_700_000_000_000 + UInt64(i), logical: 0))
            versions.append(v)
            entries.append(
                WriterLog.entry(of: v, dot: Dot(node: writer, hlc: v.versionVector[writer]), sequence: UInt64(i) + 1))
        }
        var items = WriterLog.items(for: entries, of: writer, versions: versions)
        #expect(items.allSatisfy { if case .implied = $0 { true } else { false } })
        // One entry travels whole, one shows only part of its slots in its version.
        items[3] = .whole(entries[3])
        var shown = versions
        shown[count - 5].slots.removeAll { $0.name == "rank" }
        items[count - 5] = .partial(
            record: count - 5, hlc: entries[count - 5].hlc,
            missing: entries[count - 5].slots.filter { $0.name == "rank" })
        let range = WriterLogSection.Range(writer: writer, firstSequence: 1, items: items)
        #expect(
            try WriterLog.encodedEntries(of: range, versions: shown).get() == entries.map(WriterLog.EncodedEntry.init))
        #expect(try WriterLog.entries(of: range, versions: shown).get() == entries)

        // A version that could not be rebuilt, first in the second half, then in both halves.
        var missing: [Record?] = shown
        missing[count - 2] = nil
        let late = WriterLog.encodedEntries(of: range, versions: missing)
        #expect(
            late.failureDescription?.contains("entry #\(count - 1) of") == true,
            "\(String(describing: late.failureDescription))")
        missing[10] = nil
        let early = WriterLog.encodedEntries(of: range, versions: missing)
        #expect(
            early.failureDescription?.contains("entry #11 of") == true,
            "\(String(describing: early.failureDescription))")
    }

    /// Items whose timestamps do not strictly increase — one version's write named twice, or an
    /// older write after a newer one — are a mismatch at the second item, found before anything
    /// is rebuilt, whichever way the range is rebuilt.
    @Test func itemsWhoseTimestampsDoNotIncreaseAreAMismatch() throws {
        let writer = NodeID(high: 0x0a11ce, low: 9)
        var r = Record(recordType: "Note", id: Record.ID(name: "n", zone: notes))
        r["title"] = .string("a title long enough to be hashed")
        let v = Stamping.saved(r, by: writer, at: HLC(milliseconds: 1_700_000_000_000, logical: 0))
        let hlc = v.versionVector[writer]
        let earlier = HLC(milliseconds: 1_600_000_000_000, logical: 0)
        for items: [WriterLogSection.Item] in [
            [.implied(record: 0), .implied(record: 0)],
            Array(repeating: .implied(record: 0), count: WriterLog.parallelEntries * 2),
            [.impliedAt(record: 0, hlc: hlc), .impliedAt(record: 0, hlc: earlier)],
            [.implied(record: 0), .partial(record: 0, hlc: hlc, missing: [])]
        ] {
            let range = WriterLogSection.Range(writer: writer, firstSequence: 7, items: items)
            let encoded = WriterLog.encodedEntries(of: range, versions: [v])
            #expect(
                encoded.failureDescription?.contains("entry #8 of \(writer) is not later than the entry before it")
                    == true,
                "\(items.count) items: \(String(describing: encoded.failureDescription))")
            let built = WriterLog.entries(of: range, versions: [v])
            #expect(
                built.failureDescription?.contains("entry #8 of") == true,
                "\(String(describing: built.failureDescription))")
        }
        let once = WriterLogSection.Range(
            writer: writer, firstSequence: 7, items: [.impliedAt(record: 0, hlc: earlier), .implied(record: 0)])
        #expect((try? WriterLog.encodedEntries(of: once, versions: [v]).get())?.map(\.sequence) == [7, 8])
    }

    /// A version whose slots were set by many writes of one writer, each still shown, implies an
    /// entry per write: the rebuild looks only at each write's own slots after the first (so a
    /// range naming a version's writes thousands of times costs what its slots do), and gives
    /// the entries that rebuilding each item alone gives — implied, partial and whole alike.
    @Test(arguments: [21, 22] as [UInt64]) func aVersionNamedByManyWritesGivesEachWritesEntry(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let writer = NodeID(high: 0x0a11ce, low: 11)
        var r = Record(recordType: "Note", id: Record.ID(name: "n", zone: notes))
        let count = 64 + Int(rng.next() % 64)
        for i in 0..<count {
            r["f\(1000 + i)"] = i % 3 == 0 ? .string("a value long enough to be hashed, \(i)") : .int64(Int64(i))
        }
        var v = Stamping.saved(r, by: writer, at: HLC(milliseconds: 1_700_000_000_000, logical: 0))
        // Each slot set by its own earlier write, in a shuffled order of writes.
        let order = (0..<count).shuffled(using: &rng)
        let base = 1_600_000_000_000 as UInt64
        v.slots = v.slots.enumerated().map { (i, f) in
            var f = f
            f.stamp = Dot(node: writer, hlc: HLC(milliseconds: base + UInt64(order[i]), logical: 0))
            return f
        }
        var items = [WriterLogSection.Item]()
        var expected = [WriteEntry]()
        for w in 0..<count {
            let hlc = HLC(milliseconds: base + UInt64(w), logical: 0)
            let entry = WriterLog.entry(of: v, dot: Dot(node: writer, hlc: hlc), sequence: UInt64(w) + 1)
            switch rng.next() % 3 {
            case 0: items.append(.whole(entry))
            case 1:
                let extra = WriteEntry.Slot(name: "gone\(w)", digest: [UInt8](repeating: UInt8(w & 0xff), count: 32))
                items.append(.partial(record: 0, hlc: hlc, missing: [extra]))
                expected.append(
                    WriteEntry(
                        sequence: entry.sequence, hlc: hlc, isDeletion: false, isCreation: entry.isCreation,
                        record: entry.record, slots: entry.slots + [extra]))
                continue
            default: items.append(.impliedAt(record: 0, hlc: hlc))
            }
            expected.append(entry)
        }
        items.append(.implied(record: 0))
        expected.append(
            WriterLog.entry(of: v, dot: Dot(node: writer, hlc: v.versionVector[writer]), sequence: UInt64(count) + 1))
        for (offset, item) in items.enumerated() {
            #expect(
                WriterLog.entry(for: item, sequence: UInt64(offset) + 1, writer: writer, versions: [v])
                    == expected[offset], "seed \(seed), item \(offset)")
        }
        let range = WriterLogSection.Range(writer: writer, firstSequence: 1, items: items)
        #expect(try WriterLog.entries(of: range, versions: [v]).get() == expected, "seed \(seed)")
        #expect(
            try WriterLog.encodedEntries(of: range, versions: [v]).get() == expected.map(WriterLog.EncodedEntry.init),
            "seed \(seed)")
    }

    /// A relay's forgeries: a value the writer never wrote under its stamp, a stamp of a write
    /// the writer never made, a deletion its entry calls a save.
    @Test func versionsShowingWritesNoEntryHoldsAreCaught() async throws {
        let (a, b, _) = try await Self.history()
        let writer = a.nodeID
        let entries = try await a.entries(of: writer, in: notes, after: 0, limit: 100)
        let lookup: (HLC) -> WriteEntry? = { h in entries.first { $0.hlc == h } }
        var n3 = try await b.record(for: Record.ID(name: "n3", zone: notes))
        #expect(WriterLog.check(n3, writer: writer, entry: lookup) == nil)
        var forged = n3
        let stamp = forged.fields.first { $0.name == "title" }?.stamp
        forged.slots = forged.slots.map { f in
            f.name == "title" ? Record.Field(name: "title", value: .string("forged"), stamp: stamp) : f
        }
        #expect(WriterLog.check(forged, writer: writer, entry: lookup)?.description.contains("did not write") == true)
        var later = n3
        let ahead = Dot(node: writer, hlc: HLC(rawValue: entries[2].hlc.rawValue + 50_000 << 16))
        later.slots = later.slots.map { f in
            f.name == "title" ? Record.Field(name: "title", value: f.value, stamp: ahead) : f
        }
        later.versionVector.advance(writer, to: ahead.hlc)
        #expect(WriterLog.check(later, writer: writer, entry: lookup) != nil, "a write 50 s ahead that no entry holds")
        n3.heads = [Record.Head(node: writer, isDeletion: true)]
        #expect(WriterLog.check(n3, writer: writer, entry: lookup)?.description.contains("says otherwise") == true)
    }

    @Test func malformedSectionsFail() throws {
        let writer = NodeID(high: 5, low: 5)
        func fails(_ section: WriterLogSection, records: Int, _ code: WireError.Code) {
            do throws(WireError) {
                _ = try WriterLogSection(decoding: section.encoded(), records: records)
                Issue.record("decoded: \(section)")
            } catch {
                #expect(error.code == code, "\(error)")
            }
        }
        fails(
            WriterLogSection(ranges: [.init(writer: writer, firstSequence: 1, items: [.implied(record: 2)])]),
            records: 2, .invalidValue)
        fails(
            WriterLogSection(ranges: [.init(writer: writer, firstSequence: 0, items: [.implied(record: 0)])]),
            records: 1, .invalidValue)
        fails(WriterLogSection(ranges: [.init(writer: writer, firstSequence: 1, items: [])]), records: 1, .invalidValue)
        let e = WriteEntry(sequence: 3, hlc: HLC(rawValue: 9), record: "r", slots: [])
        fails(
            WriterLogSection(ranges: [.init(writer: writer, firstSequence: 1, items: [.whole(e)])]), records: 0,
            .invalidValue)
        var twice = WriterLogSection(ranges: [])
        twice.ranges = [
            .init(writer: writer, firstSequence: 1, items: [.implied(record: 0)]),
            .init(writer: writer, firstSequence: 1, items: [.implied(record: 0)])
        ]
        fails(twice, records: 1, .duplicate)
        var bytes = WriterLogSection(ranges: [.init(writer: writer, firstSequence: 1, items: [.implied(record: 0)])])
            .encoded()
        bytes[bytes.count - 2] = 7  // the kind
        #expect(throws: WireError.self) { try WriterLogSection(decoding: bytes, records: 1) }
    }
}

extension Result where Failure == WriterLog.Mismatch {
    /// The mismatch's description, nil for a success.
    var failureDescription: String? {
        if case .failure(let m) = self { m.description } else { nil }
    }
}
