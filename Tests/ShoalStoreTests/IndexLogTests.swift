// IndexLogTests: declared-index changes are queued (additions) or logged (removals) and applied in
// batches; queries through the index must always answer exactly what a scan answers, across flush
// thresholds and reopening (which derives the queued additions again from the records).

import Testing
@testable import ShoalStore
import ShoalWire
import ShoalSamples

@Suite struct IndexLogTests {
    /// Random saves, edits, removals of the indexed value and deletions; after each step the
    /// indexed field (`cat`) and an undeclared twin holding the same value (`twin`) must select
    /// the same records, for equality, ranges and list membership.
    @Test(arguments: [(21 as UInt64, 1), (22, 7), (23, 50_000), (24, 3)])
    func indexedQueriesMatchScans(seed: UInt64, flushRows: Int) async throws {
        var rng = SplitMix64(seed: seed)
        let dir = TempDirectory()
        var store: Store? = try await Store.temporary(dir) { $0.indexLogFlushRows = flushRows }
        try await store!.createZone(notes)
        try await store!.declareIndex(zone: notes, recordType: "Note", field: "cat")
        try await store!.declareIndex(zone: notes, recordType: "Note", field: "tags")
        for step in 0..<160 {
            let s = try #require(store)
            let id = Record.ID(name: "r\(rng.next() % 25)", zone: notes)
            let existing = try? await s.record(for: id)
            switch rng.next() % 8 {
            case 0:
                if existing != nil, existing?.isDeleted == false { try? await s.delete(id) }
            case 1:
                // Save several in one request (one transaction with several log rows).
                var batch = [Record]()
                for k in 0..<3 {
                    let bid = Record.ID(name: "b\((rng.next() % 10) * 3 + UInt64(k))", zone: notes)
                    var r = (try? await s.record(for: bid)) ?? Record(recordType: "Note", id: bid)
                    let v = Int64(rng.next() % 6)
                    r["cat"] = .int64(v)
                    r["twin"] = .int64(v)
                    batch.append(r)
                }
                _ = try? await s.modify(saving: batch, policy: .changedKeys, atomically: false)
            case 2:
                if step % 40 == 39 {
                    // Reopen: the log and its count survive.
                    store = nil
                    store = try await Store.temporary(dir) { $0.indexLogFlushRows = flushRows }
                }
            default:
                var r = existing ?? Record(recordType: "Note", id: id)
                if rng.next() % 5 == 0 {
                    r["cat"] = nil
                    r["twin"] = nil
                } else {
                    let v = Int64(rng.next() % 6)
                    r["cat"] = .int64(v)
                    r["twin"] = .int64(v)
                }
                let tags = (0..<Int(rng.next() % 3)).map { _ in "t\(rng.next() % 4)" }
                r["tags"] = .list(.string(tags))
                r["tagsTwin"] = .list(.string(tags))
                _ = try? await s.save(r, policy: .changedKeys)
            }
            guard let s = store, step % 4 == 0 else { continue }
            for (indexed, scanned) in [
                (
                    Predicate.compare("cat", .equal, .int64(Int64(step % 6))),
                    Predicate.compare("twin", .equal, .int64(Int64(step % 6)))
                ),
                (.between("cat", .int64(1), .int64(3)), .between("twin", .int64(1), .int64(3))),
                (.contains("tags", .string("t\(step % 4)")), .contains("tagsTwin", .string("t\(step % 4)")))
            ] {
                let a = try await s.records(
                    matching: Query(recordType: "Note", predicate: indexed), in: notes, resultsLimit: 400
                ).records.map(\.id)
                let b = try await s.records(
                    matching: Query(recordType: "Note", predicate: scanned), in: notes, resultsLimit: 400
                ).records.map(\.id)
                #expect(
                    a == b,
                    "seed \(seed), flush every \(flushRows), step \(step): index \(a.map(\.name)) vs scan \(b.map(\.name))"
                )
            }
        }
    }

    /// Names the index finds for `cat == v` (or `tags CONTAINS v`), sorted.
    func found(_ store: Store, _ field: String, _ v: FieldValue) async throws -> [String] {
        let p: Predicate = field == "tags" ? .contains(field, v) : .compare(field, .equal, v)
        return try await store.records(matching: Query(recordType: "Note", predicate: p), in: notes, resultsLimit: 100)
            .records.map(\.id.name).sorted()
    }

    func saving(_ store: Store, _ name: String, _ cat: Int64?, tags: [String]? = nil) async throws {
        let id = Record.ID(name: name, zone: notes)
        var r = (try? await store.record(for: id)) ?? Record(recordType: "Note", id: id)
        if r.isDeleted { r = Record(recordType: "Note", id: id) }
        r["cat"] = cat.map { .int64($0) }
        if let tags { r["tags"] = .list(.string(tags)) }
        try await store.save(r, policy: .allKeys)
    }

    /// One log holding several changes of the same entry (added, removed, added again; added then
    /// removed; removed, added, removed over an applied index) ends as the last change left it,
    /// whether the log holds additions only or removals too.
    @Test func lastLoggedChangeOfAnEntryWins() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir) { $0.indexLogFlushRows = 1_000_000 }
        try await store.createZone(notes)
        try await store.declareIndex(zone: notes, recordType: "Note", field: "cat")
        try await store.declareIndex(zone: notes, recordType: "Note", field: "tags")

        // Additions only, one entry logged twice (a list holding a value twice).
        try await saving(store, "a", 1, tags: ["t1", "t1", "t2"])
        try await saving(store, "b", 1)
        #expect(try await store.indexLogRows() == (counted: 0, stored: 0))
        #expect(await store.pendingIndexAdditions == 5)
        #expect(try await found(store, "tags", .string("t1")) == ["a"])
        #expect(try await found(store, "cat", .int64(1)) == ["a", "b"])
        #expect(try await store.indexLogRows() == (counted: 0, stored: 0))
        #expect(await store.pendingIndexAdditions == 0)

        // Over applied entries: (1, a) removed, added, removed; (5, a) added, removed, added.
        try await saving(store, "a", 5)
        try await saving(store, "a", 1)
        try await saving(store, "a", 5)
        // (2, c) added, removed, added; (3, c) added, removed; (1, b) removed, added.
        try await saving(store, "c", 2)
        try await saving(store, "c", 3)
        try await saving(store, "c", 2)
        try await saving(store, "b", nil)
        try await saving(store, "b", 1)
        // (4, d) added, removed by a delete, added by re-creation over the tombstone; e added then deleted.
        try await saving(store, "d", 4)
        try await store.delete(Record.ID(name: "d", zone: notes))
        try await saving(store, "d", 4)
        try await saving(store, "e", 3)
        try await store.delete(Record.ID(name: "e", zone: notes))
        let logged = try await store.indexLogRows()
        #expect(logged.counted == logged.stored && logged.stored > 0)
        #expect(try await found(store, "cat", .int64(1)) == ["b"])
        #expect(try await found(store, "cat", .int64(5)) == ["a"])
        #expect(try await found(store, "cat", .int64(2)) == ["c"])
        #expect(try await found(store, "cat", .int64(3)) == [])
        #expect(try await found(store, "cat", .int64(4)) == ["d"])
        #expect(try await found(store, "tags", .string("t1")) == ["a"])
        #expect(try await store.indexLogRows() == (counted: 0, stored: 0))
        #expect(await store.pendingIndexAdditions == 0)
    }

    /// Log rows written by a transaction, or by the part of one undone to its savepoint (a batch
    /// that looked new but named a stored record), go with it: the count and the table agree, and
    /// the index answers what the records hold.
    @Test func rolledBackWritesLeaveTheLogConsistent() async throws {
        let dir = TempDirectory()
        var store = try await Store.temporary(dir) { $0.indexLogFlushRows = 1_000_000 }
        try await store.createZone(notes)
        try await store.declareIndex(zone: notes, recordType: "Note", field: "cat")
        try await saving(store, "b", 1)
        func new(_ name: String, _ cat: Int64) -> Record {
            var r = Record(recordType: "Note", id: Record.ID(name: name, zone: notes))
            r["cat"] = .int64(cat)
            return r
        }
        // Atomic, default policy: b exists, so the whole batch fails after a and c were logged.
        await expectCode(.partialFailure) {
            try await store.modify(saving: [new("a", 2), new("c", 3), new("b", 9)])
        }
        #expect(try await store.indexLogRows() == (counted: 0, stored: 0))
        #expect(await store.pendingIndexAdditions == 1)  // b's, not a's or c's
        // The same batch overwriting: undone to the savepoint, then redone through lookups.
        try await store.modify(saving: [new("a", 2), new("c", 3), new("b", 9)], policy: .allKeys)
        let logged = try await store.indexLogRows()
        #expect(logged.counted == logged.stored)
        store = try await Store.temporary(dir) { $0.indexLogFlushRows = 1_000_000 }
        #expect(try await store.indexLogRows() == logged)
        // Reopened: the additions are derived from the records written since the index was
        // built (a, b and c as they are now), not replayed.
        #expect(await store.pendingIndexAdditions == 3)
        #expect(try await found(store, "cat", .int64(1)) == [])
        #expect(try await found(store, "cat", .int64(2)) == ["a"])
        #expect(try await found(store, "cat", .int64(3)) == ["c"])
        #expect(try await found(store, "cat", .int64(9)) == ["b"])
    }
}

/// Runs of names as `field_postings` stores them: seeded round trips, and damaged runs (a length
/// cut off, too long, or past the end) are `internalError`, never a trap or an overread.
@Suite struct PostingListTests {
    func names(_ bytes: [UInt8]) throws -> [String] {
        var out = [String]()
        try bytes.withUnsafeBytes { raw in try PostingList.forEach(raw, index: 7) { out.append($0) } }
        return out
    }

    @Test func roundTripsSeededNames() throws {
        var rng = SplitMix64(seed: 31)
        for round in 0..<50 {
            let list = (0..<Int(rng.next() % 40)).map { i in
                String(repeating: "é", count: Int(rng.next() % 90)) + "n\(i)-\(rng.next() % 1000)"
            }
            #expect(try names(PostingList.encode(list)) == list, "seed 31, round \(round)")
        }
        #expect(try names([]) == [])
    }

    /// Seeded random bytes and mutated good runs: every input either parses (at most one name per
    /// input byte, each length prefix taking one; invalid UTF-8 is read with replacement
    /// characters) or is an error — the stored-data counterpart of the wire decoders' fuzz
    /// targets (runs are read from the store's own file, never from the network).
    @Test func arbitraryBytesParseOrFail() {
        var rng = SplitMix64(seed: 0x5EED)
        let good = PostingList.encode((0..<20).map { "name-\($0)" })
        for round in 0..<5_000 {
            var bytes =
                round % 2 == 0
                ? (0..<Int(rng.next() % 64)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                : good
            if round % 2 == 1 {
                for _ in 0..<(1 + Int(rng.next() % 4)) {
                    bytes[Int(rng.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: rng.next())
                }
            }
            if let read = try? names(bytes) {
                #expect(read.count <= bytes.count, "seed 0x5EED, round \(round): \(bytes)")
            }
        }
    }

    @Test func damagedRunsAreErrors() {
        let good = PostingList.encode(["alpha", "beta"])
        for bad in [[0x80], [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], [5, 0x61], Array(good.dropLast()), good + [200]]
            as [[UInt8]]
        {
            #expect(throws: ShoalError.self, "\(bad)") { try names(bad) }
        }
    }
}
