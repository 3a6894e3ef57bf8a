// ZonePurgeTests: a deleted zone's tombstone goes once every peer that announced the zone has
// announced it deleted, or once the retention passed; what the store keeps after (Spec/replication.md §4.1).

import Testing
import ShoalWire
@testable import ShoalStore

@Suite struct ZonePurgeTests {
    let p1 = NodeID(high: 1, low: 1), p2 = NodeID(high: 2, low: 2)

    /// A store holding `notes`, announced live by `peers`, then deleted here.
    func deletedZone(_ dir: TempDirectory, clock: HandClock, peers: [NodeID]) async throws -> (Store, NodeID) {
        let store = try await Store.temporary(dir) { $0.wallClock = clock.read }
        let inc = try await store.createZone(notes).incarnation
        _ = try await store.save(note("n1", "x"))
        for p in peers {
            try await store.notePeerAnnouncements([ZoneAnnouncement(zone: notes, incarnation: inc)], from: p)
        }
        try await store.deleteZone(notes)
        return (store, inc)
    }

    /// The tombstone waits for each peer that announced the zone to announce this incarnation
    /// deleted — another incarnation's deletion does not count — then goes: no longer announced,
    /// not counted, its incarnation remembered.
    @Test func aZoneTombstoneWaitsUntilEveryPeerThatAnnouncedTheZoneAnnouncesItDeleted() async throws {
        let dir = TempDirectory(), clock = HandClock()
        let (store, inc) = try await deletedZone(dir, clock: clock, peers: [p1, p2])
        #expect(try await store.purgeZoneTombstones(retention: nil) == 0)
        #expect(try await store.zoneTombstones().first?.waitingFor == [p1, p2])

        try await store.notePeerAnnouncements(
            [ZoneAnnouncement(zone: notes, incarnation: inc, isDeleted: true)], from: p1)
        try await store.notePeerAnnouncements(
            [ZoneAnnouncement(zone: notes, incarnation: NodeID(high: 9, low: 9), isDeleted: true)], from: p2)
        #expect(try await store.purgeZoneTombstones(retention: nil) == 0)
        #expect(try await store.zoneTombstones().first?.waitingFor == [p2])
        #expect(await store.zoneAnnouncements() == [ZoneAnnouncement(zone: notes, incarnation: inc, isDeleted: true)])

        try await store.notePeerAnnouncements(
            [ZoneAnnouncement(zone: notes, incarnation: inc, isDeleted: true)], from: p2)
        #expect(try await store.purgeZoneTombstones(retention: nil) == 1)
        #expect(await store.zoneAnnouncements().isEmpty)
        #expect(try await store.zoneTombstones().isEmpty)
        #expect(try await store.purgedIncarnations(of: [notes]) == [notes: inc])
        #expect(try await store.purgedZoneCount() == 1)

        // Kept across a reopening: the zone stays gone, its incarnation remembered.
        let again = try await Store.temporary(dir) { $0.wallClock = clock.read }
        #expect(await again.zoneAnnouncements().isEmpty)
        #expect(try await again.purgedIncarnations(of: [notes]) == [notes: inc])
    }

    /// A peer that never announces the deletion holds the tombstone only until the retention has
    /// passed since the deletion.
    @Test func aZoneTombstoneGoesOnceTheRetentionHasPassed() async throws {
        let dir = TempDirectory(), clock = HandClock()
        let (store, _) = try await deletedZone(dir, clock: clock, peers: [p1])
        clock.advance(seconds: 9)
        #expect(try await store.purgeZoneTombstones(retention: .seconds(10)) == 0)
        clock.advance(seconds: 2)
        #expect(try await store.purgeZoneTombstones(retention: .seconds(10)) == 1)
        #expect(await store.zoneAnnouncements().isEmpty)
    }

    /// A peer retired for good (`removePeer`) no longer holds the deleted zone back.
    @Test func aRetiredPeerNoLongerHoldsTheDeletedZoneBack() async throws {
        let dir = TempDirectory(), clock = HandClock()
        let (store, _) = try await deletedZone(dir, clock: clock, peers: [p1, p2])
        try await store.removePeer(p1, from: notes)
        #expect(try await store.zoneTombstones().first?.knownPeers == [p2])
        try await store.removePeer(p2, from: notes)
        #expect(try await store.purgeZoneTombstones(retention: nil) == 1)
        await expectCode(.zoneNotFound) { try await store.removePeer(p1, from: notes) }
    }

    /// A shared zone's other devices must all have announced it: while fewer have, one peer's
    /// announced deletion purges nothing; the retention still does.
    @Test func aSharedZoneWaitsForDevicesNotHeardFrom() async throws {
        let dir = TempDirectory(), clock = HandClock()
        let (store, inc) = try await deletedZone(dir, clock: clock, peers: [p1])
        try await store.notePeerAnnouncements(
            [ZoneAnnouncement(zone: notes, incarnation: inc, isDeleted: true)], from: p1)
        #expect(try await store.purgeZoneTombstones(retention: nil, peersExpected: [notes: 2]) == 0)
        #expect(try await store.zoneTombstones(peersExpected: [notes: 2]).first?.peersMissing == 1)
        clock.advance(seconds: 20)
        #expect(try await store.purgeZoneTombstones(retention: .seconds(10), peersExpected: [notes: 2]) == 1)
    }

    /// A zone no peer announced goes at the first pass; a live zone never does.
    @Test func aZoneNoPeerAnnouncedGoesAtOnceAndLiveZonesStay() async throws {
        let dir = TempDirectory(), clock = HandClock()
        let (store, _) = try await deletedZone(dir, clock: clock, peers: [])
        try await store.createZone(RecordZone.ID(name: "kept"))
        clock.advance(seconds: 100)
        #expect(try await store.purgeZoneTombstones(retention: .seconds(1)) == 1)
        #expect(await store.zoneAnnouncements().map(\.zone) == [RecordZone.ID(name: "kept")])
    }

    /// Purged incarnations are forgotten once their deletion is older than the longer retention.
    @Test func purgedIncarnationsAreForgottenAfterTheLongerRetention() async throws {
        let dir = TempDirectory(), clock = HandClock()
        let (store, _) = try await deletedZone(dir, clock: clock, peers: [])
        #expect(try await store.purgeZoneTombstones(retention: .seconds(10), forgetPurgedAfter: .seconds(120)) == 1)
        clock.advance(seconds: 119)
        try await store.purgeZoneTombstones(retention: .seconds(10), forgetPurgedAfter: .seconds(120))
        #expect(try await store.purgedZoneCount() == 1)
        clock.advance(seconds: 2)
        try await store.purgeZoneTombstones(retention: .seconds(10), forgetPurgedAfter: .seconds(120))
        #expect(try await store.purgedZoneCount() == 0)
        #expect(try await store.purgedIncarnations(of: [notes]).isEmpty)
    }

    /// A database token older than a purged deletion could not report it: it expires. A later
    /// token goes on; the zone created again is a new zone with nothing of the old one.
    @Test func aDatabaseTokenOlderThanAPurgedDeletionExpires() async throws {
        let dir = TempDirectory(), clock = HandClock()
        let store = try await Store.temporary(dir) { $0.wallClock = clock.read }
        let old = try await store.createZone(notes).incarnation
        _ = try await store.save(note("n1", "x"))
        let before = try await store.databaseChanges(since: nil).token
        try await store.deleteZone(notes)
        let after = try await store.databaseChanges(since: nil).token
        #expect(try await store.databaseChanges(since: before).deletedZones == [notes])
        #expect(try await store.purgeZoneTombstones(retention: nil) == 1)
        await expectCode(.changeTokenExpired) { _ = try await store.databaseChanges(since: before) }
        #expect(try await store.databaseChanges(since: after).deletedZones.isEmpty)

        let fresh = try await store.createZone(notes)
        #expect(fresh.incarnation != old)
        #expect(try await store.allRecordIDs(in: notes).isEmpty)
        #expect(try await store.databaseChanges(since: after).changedZones == [notes])
        let reopened = try await Store.temporary(dir) { $0.wallClock = clock.read }
        await expectCode(.changeTokenExpired) { _ = try await reopened.databaseChanges(since: before) }
    }
}
