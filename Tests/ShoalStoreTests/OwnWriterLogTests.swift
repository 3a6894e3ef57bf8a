// OwnWriterLogTests: every write a node makes is entered in its log for the zone, without gaps, in the write's transaction (Spec/authenticated-writes.md §2).

import ShoalSamples
import Testing
@testable import ShoalStore
@testable import ShoalWire

@Suite struct OwnWriterLogTests {
    /// The whole of `store`'s own log for `zone`, and whether hashing it gives the head's chain.
    static func log(_ store: Store, _ zone: RecordZone.ID = notes) async throws -> (
        entries: [WriteEntry], head: WriterLogHead, chained: Bool
    ) {
        let node = store.nodeID
        let entries = try await store.entries(of: node, in: zone, after: 0, limit: 1_000_000)
        let head = try await store.ownLogHead(of: zone)
        let chain = WriterLog.chain(from: WriterLog.chainStart(zone: zone, writer: node), after: (0, .zero), entries)
        return (entries, head, chain == head.chain && head.sequence == UInt64(entries.count))
    }

    /// A batch saved in one transaction keeps its entries in pages, a row per page; every entry
    /// and the chain value after it read back, and a save after it follows on as a row of one.
    @Test func aBatchKeepsItsEntriesInPagesWithTheirChainValues() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        let other = RecordZone.ID(name: "other")
        try await store.createZone(notes)
        try await store.createZone(other)
        try await store.save(note("first", "f"))
        let count = WriterLogPage.maxEntries + 40
        _ = try await store.modify(saving: (0..<count).map { note("n\($0)", "t\($0)") }, policy: .allKeys)
        var elsewhere = Record(recordType: "Note", id: Record.ID(name: "x", zone: other))
        elsewhere["title"] = .string("other zone")
        try await store.save(elsewhere)
        try await store.save(note("last", "l"))
        let (entries, head, chained) = try await Self.log(store)
        #expect(chained && entries.count == count + 2)
        #expect(
            SchemaMigrationTests.scalar(dir, "SELECT count(*) FROM writer_entries") == "5",
            "first, two pages, the other zone's, last")
        var chain = WriterLog.chainStart(zone: notes, writer: store.nodeID)
        for e in entries {
            chain = WriterLog.chain(chain, e)
            #expect(
                try await store.chainValue(of: store.nodeID, in: notes, at: e.sequence) == chain, "entry \(e.sequence)")
            #expect(try await store.entry(of: Dot(node: store.nodeID, hlc: e.hlc), in: notes) == e)
        }
        #expect(chain == head.chain)
        #expect(try await store.chainValue(of: store.nodeID, in: notes, at: UInt64(count + 3)) == nil)
    }

    @Test func savesDeletionsAndCascadesAreEnteredInOrder() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        let parent = try await store.save(note("parent", "p"))
        var child = note("child", "c")
        child["owner"] = .reference(Reference(recordID: parent.id, action: .deleteSelf))
        let savedChild = try await store.save(child)
        var edited = parent
        edited["title"] = .string("p2")
        try await store.save(edited)
        try await store.delete(parent.id)  // and the child, by its deleteSelf reference

        let (entries, head, chained) = try await Self.log(store)
        #expect(chained, "the head's chain is the hash of its entries")
        #expect(entries.map(\.sequence) == [1, 2, 3, 4, 5])
        #expect(entries.map(\.record) == ["parent", "child", "parent", "parent", "child"])
        #expect(entries.map(\.isCreation) == [true, true, false, false, false])
        #expect(entries.map(\.isDeletion) == [false, false, false, true, true])
        #expect(entries[2].slots.map(\.name) == ["", "title"], "an edit enters the slots it stamped")
        #expect(entries[1].slots.map(\.name) == ["", "owner", "title"])
        #expect(zip(entries, entries.dropFirst()).allSatisfy { $0.hlc < $1.hlc })
        #expect(entries[1].hlc == savedChild.versionVector[store.nodeID])
        let dot = Dot(node: store.nodeID, hlc: entries[2].hlc)
        #expect(try await store.entry(of: dot, in: notes) == entries[2])
        #expect(head.hlc == entries[4].hlc)
    }

    /// A bulk save large enough to be planned on another thread enters each record with the
    /// slots its version shows, as a single save would.
    @Test func aPlannedBulkSaveEntersWhatEachVersionShows() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        let result = try await store.modify(saving: (0..<600).map { note("n\($0)", "t\($0)") })
        #expect(result.savedRecords.count == 600)
        let (entries, _, chained) = try await Self.log(store)
        #expect(chained)
        #expect(entries.count == 600)
        let versions = try await store.storedVersions(of: entries.map { Record.ID(name: $0.record, zone: notes) })
        for e in entries {
            let v = try #require(versions[Record.ID(name: e.record, zone: notes)])
            #expect(
                WriterLog.entry(of: v, dot: Dot(node: store.nodeID, hlc: e.hlc), sequence: e.sequence) == e,
                "\(e.record)")
        }
    }

    /// A failed atomic batch writes nothing, so it enters nothing; the log goes on without a gap.
    @Test func aFailedBatchEntersNothing() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        let first = try await store.save(note("a", "1"))
        var stale = first
        stale["title"] = .string("2")
        try await store.save(stale)
        // `first` carries an old change tag: its zone's batch fails whole.
        await #expect(throws: ShoalError.self) { try await store.modify(saving: [note("b", "x"), first]) }
        #expect(try await Self.log(store).entries.count == 2)
        try await store.save(note("c", "3"))
        let (entries, _, chained) = try await Self.log(store)
        #expect(chained)
        #expect(entries.map(\.record) == ["a", "a", "c"])
    }

    /// A bulk save that assumed its records new and met one that exists is redone with lookups:
    /// each record is entered once.
    @Test func aBulkSaveRedoneWithLookupsEntersEachWriteOnce() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        try await store.save(note("n3", "old"))
        try await store.modify(saving: (0..<8).map { note("n\($0)", "new") }, policy: .allKeys)
        let (entries, _, chained) = try await Self.log(store)
        #expect(chained)
        #expect(entries.count == 9)
        #expect(Set(entries.dropFirst().map(\.record)) == Set((0..<8).map { "n\($0)" }))
    }

    /// Versions applied from a peer enter nothing in this node's log, and neither does its own
    /// write coming back.
    @Test func appliedVersionsEnterNothing() async throws {
        let da = TempDirectory(), db = TempDirectory()
        let a = try await Store.temporary(da), b = try await Store.temporary(db)
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        try await a.modify(saving: (0..<3).map { note("n\($0)", "x") })
        try await b.apply(remoteChanges: try await a.changes(in: notes, since: nil).records)
        #expect(try await Self.log(b).entries.isEmpty)
        try await b.save(note("mine", "y"))
        try await a.apply(remoteChanges: try await b.changes(in: notes, since: nil).records)
        #expect(try await Self.log(a).entries.count == 3, "its own writes came back: nothing new")
        #expect(try await Self.log(b).entries.map(\.record) == ["mine"])
    }

    /// The log survives a restart, and a zone deleted and created again starts its log afresh.
    @Test func theLogPersistsAndStartsAgainWithTheZone() async throws {
        let dir = TempDirectory()
        do {
            let store = try await Store.temporary(dir)
            try await store.createZone(notes)
            try await store.save(note("a", "1"))
            try await store.save(note("b", "2"))
        }
        let store = try await Store.temporary(dir)
        try await store.save(note("c", "3"))
        let (entries, _, chained) = try await Self.log(store)
        #expect(chained)
        #expect(entries.map(\.sequence) == [1, 2, 3])
        try await store.deleteZone(notes)
        try await store.createZone(notes)
        #expect(try await Self.log(store).entries.isEmpty)
        try await store.save(note("d", "4"))
        let again = try await Self.log(store)
        #expect(again.chained && again.entries.map(\.sequence) == [1] && again.entries.map(\.record) == ["d"])
    }

    /// A store from before logs starts each zone's log from the writes its records show.
    @Test func aStoreFromBeforeLogsStartsThemFromItsRecords() async throws {
        let dir = TempDirectory()
        var before: [Record] = []
        do {
            let store = try await Store.temporary(dir)
            try await store.createZone(notes)
            var r = note("a", "1")
            r["body"] = .string("b")
            let a = try await store.save(r)
            var edit = a
            edit["title"] = .string("2")
            try await store.save(edit)  // a's title now from the second write, its body from the first
            try await store.save(note("b", "x"))
            try await store.save(note("gone", "y"))
            try await store.delete(Record.ID(name: "gone", zone: notes))
            before = try await store.changes(in: notes, since: nil).records
        }
        #expect(SchemaMigrationTests.exec(dir, SchemaMigrationTests.dropVersion9) == 0)
        let store = try await Store.temporary(dir)
        #expect(SchemaMigrationTests.scalar(dir, "SELECT value FROM meta WHERE key = 'schema'") == "11")
        let (entries, _, chained) = try await Self.log(store)
        #expect(chained)
        // a: two writes (body's, then title's); b: one; gone: its deletion (its save shows nowhere).
        #expect(entries.map(\.record) == ["a", "a", "b", "gone"])
        #expect(entries[0].slots.map(\.name) == ["body"], "an older write shows only the slots still stamped with it")
        #expect(entries[1].slots.map(\.name) == ["", "title"])
        #expect(entries[3].isDeletion && entries[3].slots.isEmpty)
        #expect(before.count == 3)
        try await store.save(note("c", "z"))
        #expect(try await Self.log(store).entries.last?.sequence == 5)
    }
}

/// Another writer's entries are stored only as a range that follows the head held here without a
/// gap and hashes to its checkpoint's chain (Spec/authenticated-writes.md §3).
@Suite struct VerifiedWriterLogTests {
    /// Store `a` with `count` saves in `notes`, store `b` holding the same zone incarnation, and
    /// and `a`'s log.
    static func pair(count: Int) async throws -> (a: Store, b: Store, dirs: [TempDirectory], entries: [WriteEntry]) {
        let dirs = [TempDirectory(), TempDirectory()]
        let a = try await Store.temporary(dirs[0]), b = try await Store.temporary(dirs[1])
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        for i in 0..<count { try await a.save(note("n\(i)", "t\(i)")) }
        let entries = try await a.entries(of: a.nodeID, in: notes, after: 0, limit: 10_000)
        return (a, b, dirs, entries)
    }

    /// `a`'s checkpoint after `entries`, with a placeholder signature: the store checks chains,
    /// not signatures.
    static func checkpoint(_ a: Store, _ entries: ArraySlice<WriteEntry>, incarnation: NodeID? = nil) async throws
        -> WriterCheckpoint
    {
        let node = a.nodeID
        let start = WriterLog.chainStart(zone: notes, writer: node)
        let chain = WriterLog.chain(from: start, after: (0, .zero), Array(entries)) ?? []
        let inc = try await a.liveZone(notes).incarnation
        return WriterCheckpoint(
            zone: notes, incarnation: incarnation ?? inc, writer: node, sequence: entries.last?.sequence ?? 0,
            chain: chain,
            signature: [UInt8](repeating: 0x5E, count: WriterCheckpoint.signatureBytes))
    }

    @Test func rangesThatFollowTheHeadAndMatchTheirCheckpointAreKept() async throws {
        let (a, b, _, entries) = try await Self.pair(count: 6)
        let writer = a.nodeID
        let first = try await Self.checkpoint(a, entries[0..<3])
        #expect(try await b.appendVerified(Array(entries[0..<3]), of: writer, checkpoint: first, in: notes))
        #expect(
            try await b.logHead(of: writer, in: notes)
                == WriterLogHead(sequence: 3, hlc: entries[2].hlc, chain: first.chain))
        // The next range is hashed on from the head held: its checkpoint is the chain of all six.
        let second = try await Self.checkpoint(a, entries[0..<6])
        #expect(try await b.appendVerified(Array(entries[3..<6]), of: writer, checkpoint: second, in: notes))
        #expect(try await b.entries(of: writer, in: notes, after: 0, limit: 100) == entries)
        #expect(try await b.entry(of: Dot(node: writer, hlc: entries[4].hlc), in: notes) == entries[4])
        #expect(try await b.checkpoint(of: writer, in: notes) == second)
        #expect(try await b.checkpoint(of: writer, in: notes, atMost: 5) == first)
        #expect(try await b.checkpoint(of: writer, in: notes, atMost: 2) == nil)
    }

    /// A long verified range is kept in pages of ``WriterLogPage/maxEntries`` entries, one row
    /// each; every entry reads back by sequence and by dot, and the sequence of the newest entry
    /// at or before a timestamp is found inside a page, at its edges and between entries.
    @Test func aLongRangeIsKeptInPagesAndReadsBackEntryByEntry() async throws {
        let count = WriterLogPage.maxEntries * 2 + 37
        let (a, b, dirs, entries) = try await Self.pair(count: count)
        let writer = a.nodeID
        #expect(entries.count == count)
        // Two ranges: a single entry (a row of one), then the rest (pages).
        #expect(
            try await b.appendVerified(
                [entries[0]], of: writer, checkpoint: try await Self.checkpoint(a, entries[0..<1]), in: notes))
        #expect(
            try await b.appendVerified(
                Array(entries[1...]), of: writer, checkpoint: try await Self.checkpoint(a, entries[0...]), in: notes))
        #expect(
            SchemaMigrationTests.scalar(dirs[1], "SELECT count(*) FROM writer_entries") == "4",
            "one row, then three pages")
        #expect(try await b.entries(of: writer, in: notes, after: 0, limit: count + 5) == entries)
        var rng = SplitMix64(seed: 11)
        for _ in 0..<60 {
            let after = Int(rng.next() % UInt64(count + 1)), limit = 1 + Int(rng.next() % 300)
            let expected = Array(entries.dropFirst(after).prefix(limit))
            #expect(
                try await b.entries(of: writer, in: notes, after: UInt64(after), limit: limit) == expected,
                "after \(after), limit \(limit)")
        }
        for i in [0, 1, 2, 255, 256, 257, 511, 512, 513, count - 1] {
            let e = entries[i]
            #expect(try await b.entry(of: Dot(node: writer, hlc: e.hlc), in: notes) == e, "entry \(i)")
            #expect(try await b.sequence(of: writer, in: notes, atMost: e.hlc) == e.sequence, "at entry \(i)")
            // A timestamp just before the entry's: the one before it.
            let earlier = HLC(rawValue: e.hlc.rawValue &- 1)
            #expect(try await b.sequence(of: writer, in: notes, atMost: earlier) == e.sequence - 1, "before entry \(i)")
            #expect(
                try await b.entry(of: Dot(node: writer, hlc: earlier), in: notes) == nil
                    || i > 0 && entries[i - 1].hlc == earlier)
        }
        #expect(try await b.sequence(of: writer, in: notes, atMost: HLC(rawValue: .max >> 1)) == UInt64(count))
        #expect(try await b.logHead(of: writer, in: notes).sequence == UInt64(count))
    }

    /// A store of version 9 (one entry per row, no `count`) opens at version 10 with every entry
    /// readable, and keeps the next verified range in pages.
    @Test func aVersion9StoreReadsItsEntriesAndPagesTheNextRange() async throws {
        let dirs = [TempDirectory(), TempDirectory()]
        let a = try await Store.temporary(dirs[0])
        let inc = try await a.createZone(notes).incarnation
        for i in 0..<300 { try await a.save(note("n\(i)", "t\(i)")) }
        let entries = try await a.entries(of: a.nodeID, in: notes, after: 0, limit: 1_000)
        let writer = a.nodeID
        do {
            // Ranges of one entry: rows as version 9 kept every entry.
            let b = try await Store.temporary(dirs[1])
            try await b.createZone(notes, incarnation: inc)
            for i in 0..<3 {
                #expect(
                    try await b.appendVerified(
                        [entries[i]], of: writer, checkpoint: try await Self.checkpoint(a, entries[0...i]), in: notes))
            }
        }
        #expect(
            SchemaMigrationTests.exec(
                dirs[1], "ALTER TABLE writer_entries DROP COLUMN count; UPDATE meta SET value = 9 WHERE key = 'schema'")
                == 0)
        let b = try await Store.temporary(dirs[1])
        #expect(SchemaMigrationTests.scalar(dirs[1], "SELECT value FROM meta WHERE key = 'schema'") == "11")
        #expect(try await b.entries(of: writer, in: notes, after: 0, limit: 10) == Array(entries[0..<3]))
        #expect(
            try await b.appendVerified(
                Array(entries[3...]), of: writer, checkpoint: try await Self.checkpoint(a, entries[0...]), in: notes))
        #expect(
            SchemaMigrationTests.scalar(dirs[1], "SELECT count(*) FROM writer_entries") == "5",
            "three rows of one, then two pages")
        #expect(try await b.entries(of: writer, in: notes, after: 1, limit: 1_000) == Array(entries[1...]))
        #expect(try await b.entry(of: Dot(node: writer, hlc: entries[2].hlc), in: notes) == entries[2])
        #expect(try await b.entry(of: Dot(node: writer, hlc: entries[200].hlc), in: notes) == entries[200])
    }

    /// A damaged row reads as nil, never a trap: seeded random bytes and counts, and every
    /// truncation and bit flip of a real page.
    @Test func aDamagedPageReadsAsNothing() {
        let entries: [WriterLogPage.Entry] = (1...5).map {
            (
                hlc: HLC(rawValue: UInt64($0) << 20), bytes: [UInt8](repeating: UInt8($0), count: $0 * 3),
                chain: $0 % 2 == 0 ? [UInt8](repeating: 7, count: 32) : []
            )
        }
        let page = WriterLogPage.encode(entries[...])
        let last = (sequence: UInt64(9), hlc: HLC(rawValue: 5 << 20))
        #expect(WriterLogPage.items(of: page, count: 5, last: last)?.map(\.sequence) == [5, 6, 7, 8, 9])
        for cut in 0..<page.count { _ = WriterLogPage.items(of: Array(page.prefix(cut)), count: 5, last: last) }
        for i in 0..<page.count {
            var flipped = page
            flipped[i] ^= 0x80
            _ = WriterLogPage.items(of: flipped, count: 5, last: last)
        }
        var rng = SplitMix64(seed: 29)
        for round in 0..<2_000 {
            let bytes = (0..<Int(rng.next() % 64)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let count = Int64(bitPattern: rng.next() % 300) - 20
            let items = WriterLogPage.items(
                of: bytes, count: count, last: (UInt64(rng.next() % 400), HLC(rawValue: rng.next())))
            if let items {
                #expect(
                    items.allSatisfy { $0.bytes.upperBound <= bytes.count && $0.chain.upperBound <= bytes.count },
                    "seed 29 round \(round)")
            }
        }
    }

    @Test func aGapAReplayAnotherChainOrAnotherIncarnationStoresNothing() async throws {
        let (a, b, _, entries) = try await Self.pair(count: 4)
        let writer = a.nodeID
        let all = try await Self.checkpoint(a, entries[0..<4])
        var gapped = Array(entries)
        gapped.remove(at: 1)
        #expect(try await !b.appendVerified(gapped, of: writer, checkpoint: all, in: notes), "a gap")
        var altered = entries
        altered[2].slots[0].digest[0] ^= 1
        #expect(
            try await !b.appendVerified(altered, of: writer, checkpoint: all, in: notes),
            "an entry changed after signing")
        #expect(
            try await !b.appendVerified(Array(entries[0..<3]), of: writer, checkpoint: all, in: notes),
            "a range short of its checkpoint")
        let elsewhere = try await Self.checkpoint(a, entries[0..<4], incarnation: NodeID(high: 9, low: 9))
        #expect(
            try await !b.appendVerified(entries, of: writer, checkpoint: elsewhere, in: notes), "another incarnation")
        #expect(try await b.logHead(of: writer, in: notes).sequence == 0, "nothing stored")
        #expect(try await b.appendVerified(entries, of: writer, checkpoint: all, in: notes))
        #expect(try await !b.appendVerified(entries, of: writer, checkpoint: all, in: notes), "the same range again")
        await #expect(throws: ShoalError.self) {
            try await a.appendVerified(entries, of: writer, checkpoint: all, in: notes)
        }
    }
}

/// Knowledge of a writer is adopted only as far as its log is reflected here
/// (Spec/authenticated-writes.md §6): gapless, each entry's record covering its dot.
@Suite struct ReflectedWriterLogTests {
    @Test func theReflectedPrefixStopsAtTheFirstWriteTheZoneDoesNotShow() async throws {
        let (a, b, _, _) = try await VerifiedWriterLogTests.pair(count: 0)
        let writer = a.nodeID
        for i in 0..<4 { try await a.save(note("n\(i)", "t\(i)")) }
        var edit = try await a.record(for: Record.ID(name: "n0", zone: notes))
        edit["title"] = .string("again")
        try await a.save(edit)  // entry 5, of n0 again
        let entries = try await a.entries(of: writer, in: notes, after: 0, limit: 100)
        let checkpoint = try await VerifiedWriterLogTests.checkpoint(a, entries[...])
        #expect(try await b.appendVerified(entries, of: writer, checkpoint: checkpoint, in: notes))
        #expect(
            try await b.reflected(of: writer, in: notes).sequence == 0, "entries without their versions reflect nothing"
        )

        // b gets n0 (its newest version, which covers entries 1 and 5), n1 and n3, but not n2.
        let all = try await a.changes(in: notes, since: nil).records
        try await b.apply(remoteChanges: all.filter { $0.id.name != "n2" })
        let partway = try await b.reflected(of: writer, in: notes)
        #expect(
            partway.sequence == 2 && partway.hlc == entries[1].hlc,
            "n2's write (entry 3) is missing: the prefix stops before it")
        try await b.apply(remoteChanges: all.filter { $0.id.name == "n2" })
        let whole = try await b.reflected(of: writer, in: notes)
        #expect(whole.sequence == 5 && whole.hlc == entries[4].hlc)
        #expect(try await a.reflected(of: writer, in: notes).sequence == 5, "a node's own log is reflected whole")
    }
}
