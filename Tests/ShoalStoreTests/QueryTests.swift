// QueryTests: every predicate operator, sorting by fields and system fields, paging with cursors,
// desired keys, and declared indexes that avoid decoding every record.

import Testing
import ShoalStore
import ShoalWire

@Suite struct QueryTests {
    static func seeded() async throws -> (Store, TempDirectory) {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        var batch = [Record]()
        for i in 0..<50 {
            var r = Record(recordType: "Note", id: Record.ID(name: i < 10 ? "n0\(i)" : "n\(i)", zone: notes))
            r["title"] = .string(["alpha", "beta", "gamma", "delta", "alps"][i % 5] + " \(i)")
            r["rank"] = .int64(Int64(i))
            r["done"] = .bool(i % 2 == 0)
            r["score"] = .double(Double(50 - i) / 2)
            r["tags"] = .list(.string(i % 3 == 0 ? ["work", "home"] : ["home"]))
            batch.append(r)
        }
        var task = Record(recordType: "Task", id: Record.ID(name: "t", zone: notes))
        task["rank"] = .int64(3)
        batch.append(task)
        try await store.modify(saving: batch)
        return (store, dir)
    }

    static func names(_ r: QueryResult) -> [Int] { r.records.compactMap { Int($0.id.name.dropFirst()) } }

    @Test func everyOperator() async throws {
        let (store, _dir) = try await Self.seeded()
        _ = _dir
        func run(_ p: Predicate) async throws -> [Int] {
            Self.names(
                try await store.records(
                    matching: Query(recordType: "Note", predicate: p), in: notes, resultsLimit: 1000))
        }
        #expect(try await run(.equal("rank", .int64(7))) == [7])
        #expect(try await run(.notEqual("done", .bool(true))).count == 25)
        #expect(try await run(.less("rank", .int64(3))) == [0, 1, 2])
        #expect(try await run(.lessOrEqual("rank", .int64(3))) == [0, 1, 2, 3])
        #expect(try await run(.greater("rank", .int64(47))) == [48, 49])
        #expect(try await run(.greaterOrEqual("score", .double(24))) == [0, 1, 2])
        #expect(try await run(.between("rank", .int64(10), .int64(12))) == [10, 11, 12])
        #expect(try await run(.isIn("rank", [.int64(5), .int64(40), .int64(99)])) == [5, 40])
        #expect(try await run(.beginsWith("title", "alp")).count == 20)
        #expect(try await run(.contains("tags", .string("work"))).count == 17)
        #expect(try await run(.contains("tags", .string("work")) && .less("rank", .int64(10))) == [0, 3, 6, 9])
        #expect(try await run(!.contains("tags", .string("home"))) == [])
        #expect(try await run(.equal("rank", .string("7"))) == [])  // type mismatch never matches
        #expect(try await store.records(matching: Query(recordType: "Task"), in: notes).records.count == 1)
        await expectCode(.invalidArguments) {
            _ = try await store.records(matching: Query(recordType: "Note"), in: notes, resultsLimit: 0)
        }
        await expectCode(.zoneNotFound) {
            _ = try await store.records(matching: Query(recordType: "Note"), in: RecordZone.ID(name: "no"))
        }
    }

    @Test func sortingAndCursorPaging() async throws {
        let (store, _dir) = try await Self.seeded()
        _ = _dir
        let q = Query(
            recordType: "Note", predicate: .equal("done", .bool(true)),
            sortDescriptors: [.init(.field("score"), ascending: true)])
        var page = try await store.records(matching: q, in: notes, desiredKeys: ["rank"], resultsLimit: 10)
        var all = Self.names(page)
        #expect(page.records.allSatisfy { $0.allKeys == ["rank"] })
        while let c = page.cursor {
            page = try await store.records(continuing: c, resultsLimit: 10)
            all += Self.names(page)
        }
        #expect(all == stride(from: 48, through: 0, by: -2).map { $0 })
        let byName = try await store.records(
            matching: Query(recordType: "Note", sortDescriptors: [.init(.recordName, ascending: false)]), in: notes,
            resultsLimit: 3)
        #expect(Self.names(byName) == [49, 48, 47])
        let byMod = try await store.records(
            matching: Query(recordType: "Note", sortDescriptors: [.init(.modificationDate), .init(.creationDate)]),
            in: notes, resultsLimit: 100)
        #expect(byMod.records.count == 50)
    }

    @Test func indexedEqualityDoesNotDecodeEveryRecord() async throws {
        let (store, _dir) = try await Self.seeded()
        _ = _dir
        _ = try await store.records(
            matching: Query(recordType: "Note", predicate: .equal("rank", .int64(7))), in: notes)
        #expect(await store.lastQueryDecodeCount == 50)
        try await store.declareIndex(zone: notes, recordType: "Note", field: "rank")
        try await store.declareIndex(zone: notes, recordType: "Note", field: "tags")
        try await store.declareIndex(zone: notes, recordType: "Note", field: "title")
        let r = try await store.records(
            matching: Query(recordType: "Note", predicate: .equal("rank", .int64(7))), in: notes)
        #expect(Self.names(r) == [7])
        #expect(await store.lastQueryDecodeCount == 1)
        // The index follows saves and deletes.
        var seven = try await store.record(for: Record.ID(name: "n07", zone: notes))
        seven["rank"] = .int64(700)
        try await store.save(seven)
        try await store.delete(Record.ID(name: "n08", zone: notes))
        var fresh = Record(recordType: "Note", id: Record.ID(name: "n99", zone: notes))
        fresh["rank"] = .int64(7)
        try await store.save(fresh)
        let again = try await store.records(
            matching: Query(recordType: "Note", predicate: .equal("rank", .int64(7))), in: notes)
        #expect(Self.names(again) == [99])
        #expect(await store.lastQueryDecodeCount == 1)
        let ranged = try await store.records(
            matching: Query(recordType: "Note", predicate: .between("rank", .int64(5), .int64(9))), in: notes)
        #expect(Self.names(ranged) == [5, 6, 9, 99])
        #expect(await store.lastQueryDecodeCount == 4)
        let tagged = try await store.records(
            matching: Query(recordType: "Note", predicate: .contains("tags", .string("work"))), in: notes,
            resultsLimit: 100)
        #expect(tagged.records.count == 17)
        #expect(await store.lastQueryDecodeCount == 17)
        let prefixed = try await store.records(
            matching: Query(recordType: "Note", predicate: .beginsWith("title", "gam")), in: notes, resultsLimit: 100)
        #expect(prefixed.records.count == 10)
        #expect(await store.lastQueryDecodeCount == 10)
    }
}
