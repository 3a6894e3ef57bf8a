// SubscriptionTests: query, zone and database subscriptions fire for local and applied-remote
// changes, persist across restarts, and coalesce for a lagging consumer.

import Testing
import ShoalStore
import ShoalWire

@Suite struct SubscriptionTests {
    @Test func firesForLocalAndRemoteChanges() async throws {
        let d1 = TempDirectory(), d2 = TempDirectory()
        let store = try await Store.temporary(d1)
        let peer = try await Store.temporary(d2)
        let inc = try await store.createZone(notes).incarnation
        try await peer.createZone(notes, incarnation: inc)
        let urgent = Query(recordType: "Note", predicate: .equal("urgent", .bool(true)))
        try await store.saveSubscription(Subscription(id: "q-urgent", kind: .query(urgent, zone: notes)))
        try await store.saveSubscription(Subscription(id: "zone-notes", kind: .zone(notes)))
        try await store.saveSubscription(Subscription(id: "db", kind: .database(nil)))
        let it = await store.notifications().makeAsyncIterator()

        // Local save, not urgent: zone and database fire, the query does not.
        let plain = try await store.save(note("plain", "x"))
        var got = [String: StoreNotification]()
        for _ in 0..<2 { if let n = await it.next() { got[n.subscriptionID] = n } }
        #expect(Set(got.keys) == ["zone-notes", "db"])
        #expect(got["zone-notes"]?.recordIDs == [plain.id])
        let since = try #require(got["zone-notes"]?.since[notes])
        #expect(try await store.changes(in: notes, since: since).records.map(\.id) == [plain.id])

        // A change applied from a peer that matches the query: all three fire.
        var r = note("remote", "from peer")
        r["urgent"] = .bool(true)
        let v = try await peer.save(r)
        try await store.apply(remoteChanges: [v])
        got = [:]
        for _ in 0..<3 { if let n = await it.next() { got[n.subscriptionID] = n } }
        #expect(Set(got.keys) == ["q-urgent", "zone-notes", "db"])
        #expect(got["q-urgent"]?.recordIDs == [v.id])

        // Deleting a matching record fires the query too (it left the match).
        try await store.delete(v.id)
        got = [:]
        for _ in 0..<3 { if let n = await it.next() { got[n.subscriptionID] = n } }
        #expect(got["q-urgent"] != nil)
    }

    @Test func laggingConsumerGetsOneCoalescedNotification() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        try await store.saveSubscription(Subscription(id: "z", kind: .zone(notes)))
        let first = try await store.save(note("first", "x"))
        let before = try await store.changes(in: notes, since: nil).token
        let seq = await store.notifications()
        let it = seq.makeAsyncIterator()
        for i in 0..<300 { try await store.save(note("n\(i)", "x")) }
        let n = try #require(await it.next())
        #expect(n.subscriptionID == "z")
        #expect(n.isTruncated)
        #expect(n.recordIDs.count == 100)
        // The since token is the first un-notified change: fetching from it yields all 300.
        let since = try #require(n.since[notes])
        #expect(try await ChangesTests.drain(store, notes, from: since, limit: 1000).0.count == 300)
        #expect(try await ChangesTests.drain(store, notes, from: before, limit: 1000).0.count == 300)
        _ = first
        // Nothing else is queued: the next change yields a fresh notification.
        try await store.save(note("after", "x"))
        let n2 = try #require(await it.next())
        #expect(n2.recordIDs.map(\.name) == ["after"])
    }

    @Test func subscriptionsPersistAcrossReopen() async throws {
        let dir = TempDirectory()
        let q = Query(
            recordType: "Note",
            predicate: .and([
                .isIn("rank", [.int64(1), .string("x")]), !.beginsWith("title", "a"),
                .between("d", .double(1), .double(2)), .contains("tags", .string("t"))
            ]))
        do {
            let store = try await Store.temporary(dir)
            try await store.createZone(notes)
            try await store.saveSubscription(Subscription(id: "q", kind: .query(q, zone: notes)))
            try await store.saveSubscription(Subscription(id: "d", kind: .database(.shared)))
            try await store.saveSubscription(Subscription(id: "gone", kind: .zone(notes)))
            try await store.deleteSubscription(id: "gone")
            await expectCode(.invalidArguments) { try await store.deleteSubscription(id: "gone") }
            await expectCode(.invalidArguments) {
                try await store.saveSubscription(Subscription(id: "", kind: .zone(notes)))
            }
        }
        let store = try await Store.temporary(dir)
        let subs = await store.allSubscriptions()
        #expect(
            subs == [
                Subscription(id: "d", kind: .database(.shared)), Subscription(id: "q", kind: .query(q, zone: notes))
            ])
    }
}
