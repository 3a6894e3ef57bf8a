// ShoalNodeFacadeTests: what an app gets from `import Shoal` alone — atomic batches, paged queries
// with desired keys, one notification stream per subscription, the database's changes, indexes.

import Foundation
import Testing
import Shoal

@Suite(.timeLimit(.minutes(5))) struct ShoalNodeFacadeTests {
    static let notes = RecordZone.ID(name: "notes")
    static let lab = RecordZone.ID(name: "lab")

    static func note(_ name: String, count: Int, zone: RecordZone.ID = notes) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: zone))
        r["title"] = .string("note \(name)")
        r["count"] = .int64(Int64(count))
        return r
    }

    /// A node in a fresh directory with the zones `notes` and `lab`.
    static func node() async throws -> (ShoalNode, String) {
        let dir = NSTemporaryDirectory() + "shoal-facade-\(UUID().uuidString)"
        let node = try await ShoalNode.open(directory: dir)
        try await node.createZone(notes)
        try await node.createZone(lab)
        return (node, dir)
    }

    /// An atomic batch with one stale save commits nothing of its zone; a non-atomic one commits
    /// the rest.
    @Test func modifyIsAtomicPerZoneUnlessAskedNotToBe() async throws {
        let (node, dir) = try await Self.node()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let saved = try await node.modify(saving: [Self.note("a", count: 1), Self.note("b", count: 2)])
        #expect(saved.savedRecords.count == 2)
        // "a" again as a new record: its change tag is stale, so the save conflicts.
        let stale = Self.note("a", count: 9)
        do {
            try await node.modify(
                saving: [stale, Self.note("c", count: 3)], deleting: [Record.ID(name: "b", zone: Self.notes)])
            Issue.record("the stale save should have failed the batch")
        } catch {
            #expect(error.code == .partialFailure)
            #expect(error.partialErrors[stale.id]?.code == .serverRecordChanged)
            #expect(error.partialErrors[Record.ID(name: "c", zone: Self.notes)]?.code == .batchRequestFailed)
        }
        #expect(
            try await node.record(for: Record.ID(name: "b", zone: Self.notes))["count"] == .int64(2),
            "nothing of the batch committed")
        do {
            try await node.modify(saving: [stale, Self.note("c", count: 3)], atomically: false)
            Issue.record("the stale save should have failed")
        } catch {
            #expect(error.code == .partialFailure && error.savedRecords.map(\.id.name) == ["c"])
        }
    }

    /// Pages by the façade's cursor, with only the desired keys, over a declared index.
    @Test func queriesPageWithDesiredKeysOverAnIndex() async throws {
        let (node, dir) = try await Self.node()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await node.modify(saving: (0..<7).map { Self.note("n\($0)", count: $0) })
        try await node.declareIndex(zone: Self.notes, recordType: "Note", field: "count")
        let query = Query(
            recordType: "Note", predicate: .greaterOrEqual("count", .int64(2)),
            sortDescriptors: [.init(.field("count"), ascending: false)])
        var page = try await node.records(matching: query, in: Self.notes, desiredKeys: ["count"], resultsLimit: 2)
        var names = page.records.map(\.id.name)
        #expect(page.records.allSatisfy { $0.allKeys == ["count"] })
        while let c = page.cursor {
            page = try await node.records(
                continuing: try QueryCursor(decoding: c.encoded()), desiredKeys: ["count"], resultsLimit: 2)
            names += page.records.map(\.id.name)
        }
        #expect(names == ["n6", "n5", "n4", "n3", "n2"])
    }

    /// Two subscriptions, two streams: each gets its own notifications only.
    @Test func eachSubscriptionHasItsOwnStream() async throws {
        let (node, dir) = try await Self.node()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await node.saveSubscription(
            Subscription(
                id: "big",
                kind: .query(Query(recordType: "Note", predicate: .greater("count", .int64(10))), zone: Self.notes)))
        try await node.saveSubscription(Subscription(id: "lab", kind: .zone(Self.lab)))
        #expect(await node.subscriptions().map(\.id) == ["big", "lab"])
        let big = await node.notifications(of: "big")
        let lab = await node.notifications(of: "lab")
        try await node.save(Self.note("small", count: 1))
        try await node.save(Self.note("large", count: 50))
        try await node.save(Self.note("x", count: 0, zone: Self.lab))
        var bigIterator = big.makeAsyncIterator()
        let first = await bigIterator.next()
        #expect(
            first?.subscriptionID == "big" && first?.recordIDs.map(\.name) == ["large"], "\(String(describing: first))")
        var labIterator = lab.makeAsyncIterator()
        let second = await labIterator.next()
        #expect(second?.subscriptionID == "lab" && second?.zones == [Self.lab], "\(String(describing: second))")
        try await node.deleteSubscription(id: "lab")
        #expect(await node.subscriptions().map(\.id) == ["big"])
    }

    /// The database's changes: every zone at first, then only those changed since the token.
    @Test func databaseChangesFollowATokenPerDatabase() async throws {
        let (node, dir) = try await Self.node()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let all = try await node.databaseChanges(since: nil)
        #expect(Set(all.changedZones) == [Self.notes, Self.lab])
        try await node.save(Self.note("a", count: 1, zone: Self.lab))
        try await node.deleteZone(Self.notes)
        let since = try await node.databaseChanges(since: all.token)
        #expect(
            since.changedZones == [Self.lab] && since.deletedZones == [Self.notes],
            "\(since.changedZones) \(since.deletedZones)")
    }
}
