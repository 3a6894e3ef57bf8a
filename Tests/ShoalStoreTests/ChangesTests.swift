// ChangesTests: the change feed and its tokens — paging, resuming, the vector path, database
// changes, and expiry with recovery that finds every deletion.

import Testing
import ShoalStore
import ShoalWire

@Suite struct ChangesTests {
    /// Follows the feed from `token` to the end, returning every record seen and the final token.
    static func drain(_ store: Store, _ zone: RecordZone.ID, from token: ChangeToken?, limit: Int) async throws -> (
        [Record], ChangeToken
    ) {
        var out = [Record]()
        var t = token
        var pages = 0
        while true {
            let page = try await store.changes(in: zone, since: t, limit: limit)
            out += page.records
            t = page.token
            pages += 1
            if !page.moreComing { break }
            #expect(pages < 1000)
        }
        return (out, try #require(t))
    }

    @Test func pagesReturnLatestVersionsOnceInChangeOrder() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        try await store.modify(saving: (0..<25).map { note("n\($0)", "v1") }, atomically: false)
        for i in [3, 7, 11] {
            var r = try await store.record(for: Record.ID(name: "n\(i)", zone: notes))
            r["title"] = .string("v2")
            try await store.save(r)
        }
        try await store.modify(deleting: [Record.ID(name: "n5", zone: notes)])
        let (all, token) = try await Self.drain(store, notes, from: nil, limit: 4)
        #expect(all.count == 25)
        #expect(Set(all.map(\.id)).count == 25)
        #expect(all.suffix(4).map(\.id.name) == ["n3", "n7", "n11", "n5"])
        #expect(all.first { $0.id.name == "n7" }?["title"] == .string("v2"))
        #expect(all.last?.isDeleted == true)
        // The final token carries the zone's vector.
        let c = try token.contents()
        #expect(c.vector == (try await store.zone(notes).versionVector))

        // Resuming returns only what changed after.
        let empty = try await store.changes(in: notes, since: token)
        #expect(empty.records.isEmpty && !empty.moreComing)
        try await store.save(note("late", "x"))
        let next = try await store.changes(in: notes, since: token)
        #expect(next.records.map(\.id.name) == ["late"])
        #expect(next.deletions.isEmpty && next.modifiedRecords.count == 1)
    }

    @Test func midFeedTokensDoNotClaimUndeliveredChanges() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        try await store.modify(saving: (0..<10).map { note("n\($0)", "x") })
        let first = try await store.changes(in: notes, since: nil, limit: 3)
        #expect(first.moreComing)
        // Its vector must not cover the undelivered records' writes.
        let v = try first.token.contents().vector
        let rest = await store.records(for: (3..<10).map { Record.ID(name: "n\($0)", zone: notes) })
        for r in rest.values { #expect(!(try r.get().versionVector.isDominated(by: v))) }
    }

    @Test func foreignTokensAreAnsweredFromTheVector() async throws {
        let d1 = TempDirectory(), d2 = TempDirectory()
        let a = try await Store.temporary(d1)
        let b = try await Store.temporary(d2)
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        try await a.modify(saving: (0..<6).map { note("n\($0)", "a") })
        let fromA = try await a.changes(in: notes, since: nil)
        try await b.apply(remoteChanges: fromA.records)
        // b changes two records and adds one.
        var r = try await b.record(for: Record.ID(name: "n2", zone: notes))
        r["title"] = .string("b")
        try await b.save(r)
        try await b.delete(Record.ID(name: "n4", zone: notes))
        try await b.save(note("nb", "b"))
        // A token from a (foreign to b) gets exactly b's changes, paged.
        let (got, _) = try await Self.drain(b, notes, from: fromA.token, limit: 2)
        #expect(Set(got.map(\.id.name)) == ["n2", "n4", "nb"])
        // Token of another zone incarnation → expired.
        try await b.createZone(RecordZone.ID(name: "x"))
        let other = try await b.changes(in: RecordZone.ID(name: "x"), since: nil).token
        await expectCode(.changeTokenExpired) { _ = try await b.changes(in: notes, since: other) }
        await expectCode(.invalidArguments) { _ = try await b.changes(in: notes, since: ChangeToken(bytes: [1, 2, 3])) }
        await expectCode(.invalidArguments) { _ = try await b.changes(in: notes, since: nil, limit: 0) }
    }

    @Test func expiredTokenRecoveryFindsEveryDeletion() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        try await store.modify(saving: (0..<40).map { note("n\($0)", "x") })
        // A reader follows the zone and holds every record.
        let (seen, token) = try await Self.drain(store, notes, from: nil, limit: 7)
        var held = Set(seen.map(\.id))
        // While it is away: deletions, new records; a peer that acknowledges everything; a purge.
        let peer = NodeID.random()
        var deletedWhileAway = Set<Record.ID>()
        for i in stride(from: 0, to: 40, by: 3) {
            let id = Record.ID(name: "n\(i)", zone: notes)
            try await store.delete(id)
            deletedWhileAway.insert(id)
        }
        try await store.modify(saving: (40..<45).map { note("n\($0)", "new") })
        try await store.acknowledge(peer: peer, zone: notes, vector: VersionVector())
        #expect(try await store.purgeTombstones() == 0)  // the peer has not acknowledged them yet
        #expect(try await store.changes(in: notes, since: token).deletions.count == deletedWhileAway.count)
        try await store.acknowledge(peer: peer, zone: notes, vector: try await store.zone(notes).versionVector)
        #expect(try await store.purgeTombstones() == deletedWhileAway.count)
        #expect(!(try await store.purgeHorizon(of: notes)).isEmpty)

        // The reader comes back: its token is expired, never silently answered.
        let e = await expectCode(.changeTokenExpired) { _ = try await store.changes(in: notes, since: token) }
        #expect(e?.message.contains("allRecordIDs") == true)
        // Documented recovery: refetch from nil, then compare IDs.
        let (fresh, _) = try await Self.drain(store, notes, from: nil, limit: 7)
        #expect(fresh.allSatisfy { !$0.isDeleted })
        let live = Set(try await store.allRecordIDs(in: notes))
        let missedDeletions = held.subtracting(live)
        #expect(missedDeletions == deletedWhileAway)
        held = live
        #expect(held.count == 45 - deletedWhileAway.count)
    }

    @Test func databaseChangesReportZonesAndDeletions() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        try await store.createZone(RecordZone.ID(name: "old"))
        let first = try await store.databaseChanges(since: nil)
        #expect(first.changedZones.map(\.name) == ["notes", "old"])
        try await store.save(note("n", "x"))
        try await store.deleteZone(RecordZone.ID(name: "old"))
        try await store.createZone(RecordZone.ID(name: "team", owner: "bob"), scope: .shared)
        let second = try await store.databaseChanges(since: first.token)
        #expect(second.changedZones.map(\.name) == ["notes", "team"])
        #expect(second.deletedZones.map(\.name) == ["old"])
        #expect(
            try await store.databaseChanges(since: first.token, scope: .shared).changedZones.map(\.name) == ["team"])
        let third = try await store.databaseChanges(since: second.token)
        #expect(third.changedZones.isEmpty && third.deletedZones.isEmpty)
        let zoneToken = try await store.changes(in: notes, since: nil).token
        await expectCode(.invalidArguments) { _ = try await store.databaseChanges(since: zoneToken) }
    }
}
