// ImpliedEntriesTests: a peer's own entries kept as the versions that imply them read back, once proven, as the log the writer signed (Spec/authenticated-writes.md §5.1).

import ShoalSamples
import Testing
@testable import ShoalStore
@testable import ShoalWire

@Suite struct ImpliedEntriesTests {
    /// Store `a` with `count` saves in `notes` (then the deletions of `deleting`), store `b`
    /// holding the same zone incarnation; `a`'s log, and its stored versions in log order.
    static func pair(count: Int, deleting: [Int] = []) async throws -> (
        a: Store, b: Store, dirs: [TempDirectory], entries: [WriteEntry], versions: [Record]
    ) {
        let dirs = [TempDirectory(), TempDirectory()]
        let a = try await Store.temporary(dirs[0]), b = try await Store.temporary(dirs[1])
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        for i in 0..<count { try await a.save(note("n\(i)", "a title of note \(i), long enough to be hashed")) }
        for i in deleting { try await a.delete(Record.ID(name: "n\(i)", zone: notes)) }
        let entries = try await a.entries(of: a.nodeID, in: notes, after: 0, limit: 100_000)
        let ids = (0..<count).map { Record.ID(name: "n\($0)", zone: notes) }
        let stored = try await a.storedVersions(of: ids)
        let versions = ids.compactMap { stored[$0] }
        return (a, b, dirs, entries, versions)
    }

    /// The run of `entries` as a receiver takes it from their writer: an entry whose record's
    /// version in `versions` the write made as its record's name, any other as its bytes.
    static func run(
        _ entries: ArraySlice<WriteEntry>, of writer: NodeID, versions: [Record], checkpoint: WriterCheckpoint
    )
        -> ImpliedRun
    {
        let byName = Dictionary(versions.map { ($0.id.name, $0) }, uniquingKeysWith: { $1 })
        let items = entries.map { e -> ImpliedRun.Item in
            if let v = byName[e.record], v.versionVector.entries.count == 1, v.versionVector[writer] == e.hlc {
                return .made(record: e.record, hlc: e.hlc)
            }
            return .entry(WriterLog.EncodedEntry(e))
        }
        return ImpliedRun(
            writer: writer, firstSequence: entries.first?.sequence ?? 1, items: items, checkpoint: checkpoint)
    }

    /// A run of three pages kept with the batch that made its versions is held implied: the
    /// head counts it, sequences are found by timestamp without proving it, and reading the log
    /// proves it — every entry as the writer wrote it, the chain at the checkpoint.
    @Test func aRunKeptImpliedReadsBackAsTheWriterSignedIt() async throws {
        let count = WriterLogPage.maxEntries * 2 + 21
        let (a, b, dirs, entries, versions) = try await Self.pair(count: count)
        let writer = a.nodeID
        let checkpoint = try await VerifiedWriterLogTests.checkpoint(a, entries[...])
        let run = Self.run(entries[...], of: writer, versions: versions, checkpoint: checkpoint)
        #expect(run.items.allSatisfy { if case .made = $0 { true } else { false } })
        try await b.apply(remoteChanges: versions, encodings: [], implied: [run])
        #expect(await b.holdsImplied(of: writer, in: notes))
        #expect(SchemaMigrationTests.scalar(dirs[1], "SELECT count(*) FROM writer_implied") == "3")
        #expect(SchemaMigrationTests.scalar(dirs[1], "SELECT count(*) FROM writer_entries") == "0")
        let head = try await b.logHead(of: writer, in: notes)
        #expect(head.sequence == UInt64(count) && head.hlc == entries.last?.hlc)
        #expect(try await b.logHeads(in: notes)[writer] == UInt64(count))
        for i in [0, 1, 255, 256, 257, count - 1] {
            let e = entries[i]
            #expect(try await b.sequence(of: writer, in: notes, atMost: e.hlc) == e.sequence, "at entry \(i)")
            let earlier = HLC(rawValue: e.hlc.rawValue &- 1)
            #expect(try await b.sequence(of: writer, in: notes, atMost: earlier) == e.sequence - 1, "before \(i)")
        }
        #expect(await b.holdsImplied(of: writer, in: notes), "finding sequences proves nothing")
        // Proven a page per transaction: the log reads the same however it was proven.
        try await b.proveIfImplied(writer, in: notes, rows: 1)
        #expect(await !b.holdsImplied(of: writer, in: notes))
        #expect(SchemaMigrationTests.scalar(dirs[1], "SELECT count(*) FROM writer_entries") == "3")
        #expect(try await b.entries(of: writer, in: notes, after: 0, limit: count + 1) == entries)
        #expect(await !b.holdsImplied(of: writer, in: notes))
        #expect(try await b.logHead(of: writer, in: notes).chain == checkpoint.chain)
        #expect(try await b.checkpoint(of: writer, in: notes, atLeast: 1) == checkpoint)
        #expect(SchemaMigrationTests.scalar(dirs[1], "SELECT count(*) FROM writer_implied") == "0")
        #expect(await b.impliedCheckpointsDropped == 0)
    }

    /// A version that implies an entry keeps it when it is replaced (a local save, a newer
    /// version from a peer) or purged: the entry is rebuilt from it first. Entries of writes no
    /// stored version shows whole (a note created, then deleted) travel as bytes.
    @Test func replacedOrPurgedVersionsKeepTheEntriesTheyImplied() async throws {
        let (a, b, _, entries, versions) = try await Self.pair(count: 80, deleting: [7])
        let writer = a.nodeID
        let checkpoint = try await VerifiedWriterLogTests.checkpoint(a, entries[...])
        let run = Self.run(entries[...], of: writer, versions: versions, checkpoint: checkpoint)
        #expect(run.items.contains { if case .entry = $0 { true } else { false } }, "n7's creation")
        try await b.apply(remoteChanges: versions, encodings: [], implied: [run])
        #expect(await b.holdsImplied(of: writer, in: notes))
        // Replaced here, replaced by the writer, and the tombstone purged.
        try await b.save(note("n3", "edited on b"), policy: .allKeys)
        try await a.save(note("n4", "edited on a"), policy: .allKeys)
        let newer = try #require(try await a.storedVersions(of: [Record.ID(name: "n4", zone: notes)]).values.first)
        try await b.apply(remoteChanges: [newer])
        #expect(try await b.purgeTombstones() == 1)
        #expect(await b.holdsImplied(of: writer, in: notes), "the rest stays implied")
        #expect(try await b.entries(of: writer, in: notes, after: 0, limit: 1000) == entries)
        #expect(try await b.logHead(of: writer, in: notes).chain == checkpoint.chain)
        #expect(await b.impliedCheckpointsDropped == 0)
    }

    /// A writer whose checkpoint does not match the writes it sent loses only that checkpoint:
    /// its entries stay as it sent them, and nothing of its log past the last good checkpoint
    /// can be relayed.
    @Test func aCheckpointTheEntriesDoNotHashToIsDropped() async throws {
        let (a, b, _, entries, versions) = try await Self.pair(count: 200)
        let writer = a.nodeID
        let good = try await VerifiedWriterLogTests.checkpoint(a, entries[0..<100])
        var bad = try await VerifiedWriterLogTests.checkpoint(a, entries[...])
        bad.chain = good.chain
        try await b.apply(
            remoteChanges: Array(versions[0..<100]), encodings: [],
            implied: [Self.run(entries[0..<100], of: writer, versions: versions, checkpoint: good)])
        try await b.apply(
            remoteChanges: Array(versions[100...]), encodings: [],
            implied: [Self.run(entries[100...], of: writer, versions: versions, checkpoint: bad)])
        #expect(try await b.checkpoint(of: writer, in: notes, atLeast: 101) == nil)
        #expect(await b.impliedCheckpointsDropped == 1)
        #expect(try await b.checkpoint(of: writer, in: notes, atLeast: 1) == good)
        #expect(try await b.entries(of: writer, in: notes, after: 0, limit: 1000) == entries)
    }

    /// A relay proves implied entries as far as what it reads reaches: the checkpoint a range
    /// it serves ends at, or the entries it reads, a page at a time.
    @Test func entriesAreProvenAsFarAsTheyAreRead() async throws {
        let (a, b, _, entries, versions) = try await Self.pair(count: 300)
        let writer = a.nodeID
        var checkpoints = [WriterCheckpoint]()
        for run in 0..<3 {
            let part = entries[(run * 100)..<(run * 100 + 100)]
            let checkpoint = try await VerifiedWriterLogTests.checkpoint(a, entries[0..<(run * 100 + 100)])
            checkpoints.append(checkpoint)
            try await b.apply(
                remoteChanges: Array(versions[(run * 100)..<(run * 100 + 100)]), encodings: [],
                implied: [Self.run(part, of: writer, versions: versions, checkpoint: checkpoint)])
        }
        #expect(try await b.impliedStart(of: writer, in: notes) == 1)
        #expect(try await b.checkpoint(of: writer, in: notes, atLeast: 50) == checkpoints[0])
        #expect(try await b.impliedStart(of: writer, in: notes) == 101, "proven through the first checkpoint only")
        #expect(try await b.entries(of: writer, in: notes, after: 100, limit: 50) == Array(entries[100..<150]))
        #expect(try await b.impliedStart(of: writer, in: notes) == 201, "the page holding the entries read")
        #expect(await b.holdsImplied(of: writer, in: notes))
        #expect(try await b.checkpoint(of: writer, in: notes, atLeast: 201) == checkpoints[2])
        #expect(await !b.holdsImplied(of: writer, in: notes))
        #expect(try await b.entries(of: writer, in: notes, after: 0, limit: 1000) == entries)
        #expect(await b.impliedCheckpointsDropped == 0)
    }

    /// A batch some of whose records are held already is applied record by record: its run is
    /// kept as entries rebuilt from the batch's versions, whatever the store makes of them.
    @Test func aBatchNotAllNewKeepsItsRunAsEntries() async throws {
        let (a, b, dirs, entries, versions) = try await Self.pair(count: 100)
        let writer = a.nodeID
        try await b.save(note("n0", "b's own version, concurrent with a's"))
        let checkpoint = try await VerifiedWriterLogTests.checkpoint(a, entries[...])
        let run = Self.run(entries[...], of: writer, versions: versions, checkpoint: checkpoint)
        try await b.apply(remoteChanges: versions, encodings: [], implied: [run])
        #expect(await b.holdsImplied(of: writer, in: notes))
        #expect(
            SchemaMigrationTests.scalar(dirs[1], "SELECT count(*) FROM writer_implied") == "1",
            "one page of bytes")
        #expect(try await b.entries(of: writer, in: notes, after: 0, limit: 1000) == entries)
        #expect(try await b.logHead(of: writer, in: notes).chain == checkpoint.chain)
    }

    /// A run that does not follow the log, or names a version the batch does not hold as that
    /// write, fails the whole apply: no record and no entry is kept.
    @Test func aRunThatDoesNotHoldUpFailsTheBatch() async throws {
        let (a, b, _, entries, versions) = try await Self.pair(count: 70)
        let writer = a.nodeID
        let checkpoint = try await VerifiedWriterLogTests.checkpoint(a, entries[...])
        let gap = Self.run(entries[1...], of: writer, versions: versions, checkpoint: checkpoint)
        var other = Self.run(entries[...], of: writer, versions: versions, checkpoint: checkpoint)
        other.items[5] = .made(record: "n6", hlc: entries[5].hlc)
        for bad in [gap, other] {
            await #expect(throws: ShoalError.self) {
                try await b.apply(remoteChanges: versions, encodings: [], implied: [bad])
            }
            #expect(try await b.storedVersions(of: versions.map(\.id)).isEmpty)
            #expect(await !b.holdsImplied(of: writer, in: notes))
            #expect(try await b.logHead(of: writer, in: notes).sequence == 0)
        }
    }

    /// Entries kept implied survive a restart and are proven afterwards.
    @Test func impliedEntriesPersist() async throws {
        let dirs: [TempDirectory], entries: [WriteEntry], writer: NodeID, checkpoint: WriterCheckpoint
        do {
            let p = try await Self.pair(count: 90)
            (dirs, entries, writer) = (p.dirs, p.entries, p.a.nodeID)
            checkpoint = try await VerifiedWriterLogTests.checkpoint(p.a, entries[...])
            try await p.b.apply(
                remoteChanges: p.versions, encodings: [],
                implied: [Self.run(entries[...], of: writer, versions: p.versions, checkpoint: checkpoint)])
        }
        let reopened = try await Store.temporary(dirs[1])
        #expect(await reopened.holdsImplied(of: writer, in: notes))
        #expect(try await reopened.entries(of: writer, in: notes, after: 0, limit: 100) == entries)
        #expect(try await reopened.logHead(of: writer, in: notes).chain == checkpoint.chain)
    }

    /// A row of implied entries that does not read as one (damaged, cut short, seeded random
    /// bytes) gives nil, never a trap, and every entry it does give lies inside the row.
    @Test func aDamagedRowReadsAsNothing() {
        let items = (1...4).map {
            ImpliedPage.Item(
                sequence: UInt64(6 + $0), hlc: HLC(rawValue: UInt64($0) << 20), isEntry: $0 % 2 == 0,
                bytes: [UInt8](repeating: UInt8($0), count: $0 * 5)[...])
        }
        let row = ImpliedPage.encode(items)
        let read = ImpliedPage.items(of: row, count: 4, last: 10)
        #expect(read?.map(\.sequence) == [7, 8, 9, 10] && read?.map(\.isEntry) == [false, true, false, true])
        #expect(read?.map { Array($0.bytes) } == items.map { Array($0.bytes) })
        for cut in 0..<row.count { #expect(ImpliedPage.items(of: Array(row.prefix(cut)), count: 4, last: 10) == nil) }
        for i in row.indices {
            var flipped = row
            flipped[i] ^= 0x80
            _ = ImpliedPage.items(of: flipped, count: 4, last: 10)
        }
        var rng = SplitMix64(seed: 31)
        for round in 0..<2_000 {
            let bytes = (0..<Int(rng.next() % 80)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let count = Int64(bitPattern: rng.next() % 300) - 20
            if let got = ImpliedPage.items(of: bytes, count: count, last: rng.next() % 400) {
                #expect(got.allSatisfy { $0.bytes.endIndex <= bytes.count }, "seed 31 round \(round)")
            }
        }
    }
}
