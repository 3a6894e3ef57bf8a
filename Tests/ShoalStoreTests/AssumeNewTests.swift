// AssumeNewTests: saves without change tags are inserted without a lookup first; when one of them
// names a record that exists (live or tombstone), the chunk is redone through lookups and must end
// exactly as if it had taken that path from the start.

import Testing
import ShoalStore
import ShoalWire

@Suite struct AssumeNewTests {
    @Test func existingRecordInANewLookingBatchIsUpdatedNotDuplicated() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        let first = try await store.save(note("b", "old"))
        let before = try await store.changes(in: notes, since: nil).token
        let r = try await store.modify(saving: [note("a", "A"), note("b", "new"), note("c", "C")], policy: .allKeys)
        #expect(r.savedRecords.map(\.id.name) == ["a", "b", "c"])
        let b = try await store.record(for: first.id)
        #expect(b["title"] == .string("new"))
        #expect(b.creation == first.creation)
        #expect(b.versionVector.compare(first.versionVector) == .after)
        // The feed holds each record once, with no gap or duplicate sequence.
        let feed = try await store.changes(in: notes, since: before)
        #expect(feed.records.map(\.id.name).sorted() == ["a", "b", "c"])
        #expect(try await store.changes(in: notes, since: nil).records.count == 3)
        #expect(try await store.changes(in: notes, since: feed.token).records.isEmpty)
    }

    @Test func conflictInANewLookingAtomicBatchWritesNothing() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        try await store.save(note("b", "old"))
        let e = await expectCode(.partialFailure) {
            try await store.modify(saving: [note("a", "A"), note("b", "new")])
        }
        #expect(e?.partialErrors[Record.ID(name: "b", zone: notes)]?.code == .serverRecordChanged)
        #expect(e?.partialErrors[Record.ID(name: "a", zone: notes)]?.code == .batchRequestFailed)
        #expect(try await store.allRecordIDs(in: notes).map(\.name) == ["b"])
        #expect(try await store.record(for: Record.ID(name: "b", zone: notes))["title"] == .string("old"))
    }

    @Test func tombstoneInANewLookingChunkIsRecreatedAcrossChunks() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir) { $0.chunkSize = 3 }
        try await store.createZone(notes)
        let gone = try await store.save(note("n4", "gone"))
        try await store.delete(gone.id)
        let tomb = try #require(try await store.changes(in: notes, since: nil).records.first)
        // n4 sits in the second chunk of three.
        let batch = (0..<8).map { note("n\($0)", "v\($0)") }
        try await store.modify(saving: batch, policy: .changedKeys, atomically: false)
        let again = try await store.record(for: gone.id)
        #expect(again["title"] == .string("v4"))
        #expect(again.versionVector.compare(tomb.versionVector) == .after)
        #expect(try await store.allRecordIDs(in: notes).count == 8)
        #expect(try await store.changes(in: notes, since: nil).records.count == 8)
    }

    /// New-looking records are inserted in batches of 64 rows: a stored record inside a full
    /// batch, or in the tail after it, undoes the whole attempt, and the redo ends as the lookup
    /// path would: every record once, one feed entry each, no sequence gap.
    @Test(arguments: [10, 40, 69])
    func existingRecordInsideABatchOfNewRowsIsRedone(at position: Int) async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        let stored = try await store.save(note("n\(position)", "old"))
        let batch = (0..<70).map { note("n\($0)", "v\($0)") }
        let e = await expectCode(.partialFailure) { try await store.modify(saving: batch) }
        #expect(e?.partialErrors[stored.id]?.code == .serverRecordChanged)
        #expect(try await store.allRecordIDs(in: notes) == [stored.id])
        #expect(try await store.changes(in: notes, since: nil).records.count == 1)

        let r = try await store.modify(saving: batch, policy: .allKeys)
        #expect(r.savedRecords.map(\.id) == batch.map(\.id))
        #expect(try await store.record(for: stored.id)["title"] == .string("v\(position)"))
        let feed = try await store.changes(in: notes, since: nil)
        #expect(feed.records.map(\.id.name).sorted() == batch.map(\.id.name).sorted())
        #expect(try await store.allRecordIDs(in: notes).count == 70)
        // The zone's sequence counts one write per save, the first save included.
        let more = try await store.modify(saving: [note("n70", "x")])
        #expect(try await store.changes(in: notes, since: feed.token).records.map(\.id) == more.savedRecords.map(\.id))
    }

    /// Batches of new records large enough to be planned on another thread (``SavePlanner``,
    /// 256 records and up, handed over 64 at a time): an invalid record, or a stored one, anywhere
    /// in them ends as the lookup path would — each item's own error, the rest of an atomic
    /// batch `batchRequestFailed`, a non-atomic batch saved around it — and a clean batch saves
    /// every record stamped with its own dot, in order.
    @Test(arguments: [0, 63, 64, 299, 599])
    func largeBatchesPlannedOnAnotherThreadEndAsTheLookupPathWould(at position: Int) async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        try await store.declareIndex(zone: notes, recordType: "Note", field: "title")
        var batch = (0..<600).map { note("n\($0)", "v\($0)") }
        batch[position]["bad field"] = .int64(1)
        let bad = batch[position].id
        let e = await expectCode(.partialFailure) { try await store.modify(saving: batch) }
        #expect(e?.partialErrors[bad]?.code == .invalidArguments)
        #expect(e?.partialErrors.count == 600)
        #expect(e?.partialErrors.values.filter { $0.code == .batchRequestFailed }.count == 599)
        #expect(try await store.allRecordIDs(in: notes).isEmpty)
        #expect(await store.pendingIndexAdditions == 0)

        let f = await expectCode(.partialFailure) { try await store.modify(saving: batch, atomically: false) }
        #expect(f?.partialErrors.keys.map { $0 } == [bad])
        #expect(try await store.allRecordIDs(in: notes).count == 599)

        // A stored record (the one that failed, now saved) in a new-looking batch of 600.
        batch[position]["bad field"] = nil
        let stored = try await store.save(batch[position])
        let fresh = (600..<1200).enumerated().map { i, n in
            i == position ? note(stored.id.name, "again") : note("n\(n)", "v\(n)")
        }
        let g = await expectCode(.partialFailure) { try await store.modify(saving: fresh) }
        #expect(g?.partialErrors[stored.id]?.code == .serverRecordChanged)
        #expect(try await store.allRecordIDs(in: notes).count == 600)

        let r = try await store.modify(saving: fresh, policy: .allKeys)
        #expect(r.savedRecords.map(\.id) == fresh.map(\.id))
        let dots = r.savedRecords.compactMap { $0.fields.first?.stamp }
        #expect(dots.count == 600)
        #expect(zip(dots, dots.dropFirst()).allSatisfy { $0 < $1 })
        for s in r.savedRecords where s.id != stored.id {
            #expect(s.creation == s.fields.first?.stamp)
            #expect(s.versionVector.count == 1)
        }
        #expect(try await store.record(for: stored.id)["title"] == .string("again"))
        #expect(try await store.allRecordIDs(in: notes).count == 1199)
        #expect(try await store.changes(in: notes, since: nil, limit: 2000).records.count == 1199)
        let rows = try await store.clockRows()
        #expect(rows.stored == rows.expected)
        // The index entries the planner computed answer as the records do.
        func titled(_ t: String) async throws -> [String] {
            try await store.records(
                matching: Query(recordType: "Note", predicate: .compare("title", .equal, .string(t))), in: notes
            )
            .records.map(\.id.name)
        }
        #expect(try await titled("again") == [stored.id.name])
        #expect(try await titled("v\(position)") == [])
        for n in [0, 63, 64, 599, 600, 663, 1199] where n != position && n != 600 + position {
            #expect(try await titled("v\(n)") == ["n\(n)"], "title v\(n)")
        }
    }

    /// A peer batch whose first record is not stored is first inserted in batches of 64 rows
    /// without lookups; a stored record inside a full batch or in the tail, or a record twice
    /// in the batch, undoes that attempt. Either way the store ends as one applying the same
    /// versions one call per record: same counts, same records, clock rows following them.
    @Test(arguments: [(-1, false), (-1, true), (10, false), (40, false), (99, false)])
    func peerBatchEndsAsRecordByRecord(storedAt position: Int, duplicate: Bool) async throws {
        let da = TempDirectory(), d1 = TempDirectory(), d2 = TempDirectory()
        let a = try await Store.temporary(da)
        let b1 = try await Store.temporary(d1), b2 = try await Store.temporary(d2)
        let inc = try await a.createZone(notes).incarnation
        try await b1.createZone(notes, incarnation: inc)
        try await b2.createZone(notes, incarnation: inc)
        let saved = try await a.modify(saving: (0..<100).map { note("n\($0)", "v\($0)") }, atomically: false)
            .savedRecords
        try await a.delete(saved[5].id)
        var batch = try await a.changes(in: notes, since: nil).records
        if position >= 0 {
            // Both receivers hold an older version of the record at `position`.
            let old = saved[position]
            try await b1.apply(remoteChanges: [old])
            try await b2.apply(remoteChanges: [old])
            var edited = old
            edited["title"] = .string("edited")
            let newer = try await a.save(edited)
            batch.removeAll { $0.id == newer.id }
            batch.insert(newer, at: position)
        }
        if duplicate { batch.append(batch[3]) }
        let together = try await b1.apply(remoteChanges: batch)
        func counts(_ x: ApplyResult) -> [Int] { [x.inserted, x.replaced, x.merged, x.unchanged, x.cascaded, x.skewed] }
        var oneByOne = [0, 0, 0, 0, 0, 0]
        for r in batch {
            let x = counts(try await b2.apply(remoteChanges: [r]))
            for i in oneByOne.indices { oneByOne[i] += x[i] }
        }
        #expect(counts(together) == oneByOne)
        let one = try await b1.changes(in: notes, since: nil).records
        let two = try await b2.changes(in: notes, since: nil).records
        #expect(one == two)
        #expect(one.count == 100)
        let rows = try await b1.clockRows()
        #expect(rows.stored == rows.expected)
    }
}
