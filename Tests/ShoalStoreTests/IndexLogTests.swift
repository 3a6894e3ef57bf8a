// IndexLogTests: declared-index changes are logged and applied in batches; queries through the
// index must always answer exactly what a scan answers, across flush thresholds and reopening.

import Testing
import ShoalStore
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
            for (indexed, scanned) in [(Predicate.compare("cat", .equal, .int64(Int64(step % 6))), Predicate.compare("twin", .equal, .int64(Int64(step % 6)))),
                                       (.between("cat", .int64(1), .int64(3)), .between("twin", .int64(1), .int64(3))),
                                       (.contains("tags", .string("t\(step % 4)")), .contains("tagsTwin", .string("t\(step % 4)")))] {
                let a = try await s.records(matching: Query(recordType: "Note", predicate: indexed), in: notes, resultsLimit: 400).records.map(\.id)
                let b = try await s.records(matching: Query(recordType: "Note", predicate: scanned), in: notes, resultsLimit: 400).records.map(\.id)
                #expect(a == b, "seed \(seed), flush every \(flushRows), step \(step): index \(a.map(\.name)) vs scan \(b.map(\.name))")
            }
        }
    }
}
