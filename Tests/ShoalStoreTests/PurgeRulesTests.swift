// PurgeRulesTests: what a purge may remove (acknowledgements, retention, knowledge), and a record
// created again after its tombstone was purged.

import Testing
import ShoalStore
import ShoalWire
import ShoalDiff
import ShoalSamples

@Suite struct PurgeRulesTests {
    /// A known peer that has not acknowledged a deletion keeps its tombstone until the
    /// retention has passed since the deletion; then it goes and the horizon covers it.
    @Test func aTombstoneWaitsForAPeerThatHasNotAcknowledgedItUntilTheRetention() async throws {
        let dir = TempDirectory(), clock = HandClock()
        let store = try await Store.temporary(dir) { $0.wallClock = clock.read }
        try await store.createZone(notes)
        _ = try await store.save(note("n1", "x"))
        try await store.acknowledge(
            peer: NodeID.random(), zone: notes, vector: try await store.zone(notes).versionVector)
        try await store.delete(Record.ID(name: "n1", zone: notes))
        let everything = [notes: try await store.zone(notes).versionVector]

        #expect(try await store.purgeTombstones(retention: nil, knowledge: everything) == 0)
        clock.advance(seconds: 9)
        #expect(try await store.purgeTombstones(retention: .seconds(10), knowledge: everything) == 0)
        clock.advance(seconds: 2)
        #expect(try await store.purgeTombstones(retention: .seconds(10), knowledge: everything) == 1)
        #expect(try await store.tombstoneState(of: notes).tombstones == 0)
        #expect(!(try await store.purgeHorizon(of: notes)).isEmpty)
    }

    /// While fewer peers have acknowledged a zone than the caller expects (a shared zone's other
    /// devices), acknowledgements purge nothing there: a member that has not acknowledged yet is
    /// no known peer. The retention still does.
    @Test func acknowledgementsPurgeNothingWhileExpectedPeersAreMissing() async throws {
        let dir = TempDirectory(), clock = HandClock()
        let store = try await Store.temporary(dir) { $0.wallClock = clock.read }
        try await store.createZone(notes)
        _ = try await store.save(note("n1", "x"))
        try await store.delete(Record.ID(name: "n1", zone: notes))
        let everything = [notes: try await store.zone(notes).versionVector]
        try await store.acknowledge(peer: NodeID.random(), zone: notes, vector: everything[notes] ?? VersionVector())
        #expect(try await store.purgeTombstones(retention: nil, knowledge: everything, peersExpected: [notes: 2]) == 0)
        clock.advance(seconds: 20)
        #expect(
            try await store.purgeTombstones(retention: .seconds(10), knowledge: everything, peersExpected: [notes: 2])
                == 1)
    }

    /// A node purged its deletion of a record, by the retention, before a peer had it. That peer
    /// held the node's edit from before the deletion and merged it with another node's later
    /// deletion of its own copy; the merge comes back carrying the node's edit as a live head.
    /// The node knows that edit was deleted here (its own write, which its stored version no
    /// longer reflects, at or below its horizon), so it deletes it again with a write of its own,
    /// which supersedes the merge everywhere — instead of bringing the deleted record back (a
    /// purge-simulation seed).
    @Test(arguments: [true, false])
    func ownWritesAPurgedDeletionSupersededStayDeleted(otherDeletionFirst: Bool) async throws {
        let dir = TempDirectory(), other = TempDirectory(), clock = HandClock()
        let p = try await Store.temporary(dir) { $0.wallClock = clock.read }
        let d = try await Store.temporary(other) { $0.wallClock = clock.read }
        let inc = try await p.createZone(notes).incarnation
        try await d.createZone(notes, incarnation: inc)
        let id = Record.ID(name: "n1", zone: notes)
        let created = try await d.save(note("n1", "x"))
        try await p.apply(remoteChanges: [created])
        var edit = try await p.record(for: id)
        edit["title"] = .string("edited on p")
        let edited = try await p.save(edit)
        try await p.delete(id)
        clock.advance(seconds: 100)
        #expect(
            try await p.purgeTombstones(
                retention: .seconds(1), knowledge: [notes: try await p.zone(notes).versionVector]) == 1)
        // d deletes its copy, which never had p's edit; a third node merged p's edit with it.
        try await d.delete(id)
        let dDeleted = try #require(try await d.storedVersions(of: [id]).values.first)
        let merged = try merge(edited, dDeleted)
        #expect(!merged.isDeleted)
        if otherDeletionFirst { try await p.apply(remoteChanges: [dDeleted]) }
        try await p.apply(remoteChanges: [merged])
        let held = try #require(try await p.storedVersions(of: [id]).values.first)
        #expect(held.isDeleted, "\(held)")
        #expect(held.versionVector.compare(merged.versionVector) == .after)
        // The new deletion supersedes the merge where it is held.
        try await d.apply(remoteChanges: [merged, held])
        #expect(try await d.storedVersions(of: [id]).values.first == held)
    }

    /// A record another node created again over a purge horizon names this node's writes to
    /// other records in its vector, at or below this node's horizon: no head and no slot of
    /// this node, so nothing of it is a deleted write here, and it is stored as it came.
    @Test func aRecordCreatedAgainElsewhereOverTheHorizonIsKept() async throws {
        let dir = TempDirectory(), clock = HandClock()
        let p = try await Store.temporary(dir) { $0.wallClock = clock.read }
        try await p.createZone(notes)
        _ = try await p.save(note("gone", "x"))
        try await p.delete(Record.ID(name: "gone", zone: notes))
        clock.advance(seconds: 100)
        #expect(
            try await p.purgeTombstones(
                retention: .seconds(1), knowledge: [notes: try await p.zone(notes).versionVector]) == 1)
        let horizon = try await p.purgeHorizon(of: notes)
        let q = NodeID(high: 0x51, low: 1),
            created = Dot(node: q, hlc: HLC(rawValue: horizon[p.nodeID].rawValue + 1000))
        var vv = horizon
        vv.advance(q, to: created.hlc)
        let again = Record(
            recordType: "Note", id: Record.ID(name: "fresh", zone: notes), parent: nil, creation: created,
            versionVector: vv, heads: [Record.Head(node: q, isDeletion: false)],
            fields: [Record.Field(name: "title", value: .string("new"), stamp: created)], extensions: [])
        #expect(try await p.apply(remoteChanges: [again]).inserted == 1)
        #expect(try await p.storedVersions(of: [again.id]).values.first == again)
    }

    /// A tombstone the caller's knowledge does not cover stays, whatever the acknowledgements
    /// and the retention say; a zone left out of the knowledge is not purged at all.
    @Test func aTombstoneTheKnowledgeDoesNotCoverIsKept() async throws {
        let dir = TempDirectory(), clock = HandClock()
        let store = try await Store.temporary(dir) { $0.wallClock = clock.read }
        try await store.createZone(notes)
        _ = try await store.save(note("n1", "x"))
        try await store.delete(Record.ID(name: "n1", zone: notes))
        clock.advance(seconds: 100)
        #expect(try await store.purgeTombstones(retention: .seconds(1), knowledge: [notes: VersionVector()]) == 0)
        #expect(try await store.purgeTombstones(retention: .seconds(1), knowledge: [:]) == 0)
        #expect(
            try await store.purgeTombstones(
                retention: .seconds(1), knowledge: [notes: try await store.zone(notes).versionVector]) == 1)
    }

    /// A record created again where its tombstone was purged starts from the purge horizon, so a
    /// store that still holds the tombstone takes the new version whole: without that, the two
    /// were concurrent, the holder merged them (bringing back the deleted version's fields) and the
    /// stores differed for good.
    @Test func aRecordCreatedAgainAfterAPurgeSupersedesTheTombstoneHeldElsewhere() async throws {
        let d1 = TempDirectory(), d2 = TempDirectory()
        let a = try await Store.temporary(d1), b = try await Store.temporary(d2)
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        var first = note("n1", "old")
        first["extra"] = .string("from the deleted version")
        try await b.apply(remoteChanges: [try await a.save(first)])
        // B edits it too, so the deleted version holds a write of each store.
        var edited = try await b.record(for: first.id)
        edited["extra"] = .string("edited on b")
        try await a.apply(remoteChanges: [try await b.save(edited)])
        try await a.delete(first.id)
        let tombstone = try #require(try await a.storedVersions(of: [first.id])[first.id])
        try await b.apply(remoteChanges: [tombstone])
        #expect(try await a.purgeTombstones() == 1)

        let again = try await a.save(note("n1", "new"))
        #expect(tombstone.versionVector.isDominated(by: again.versionVector))
        let applied = try await b.apply(remoteChanges: [again])
        #expect(applied.replaced == 1 && applied.merged == 0, "\(applied)")
        let onB = try await b.record(for: first.id)
        #expect(onB == again)
        #expect(onB["extra"] == nil && onB["title"] == .string("new"))
    }

    /// Many new records saved at once (the planned bulk path) start from the horizon too.
    @Test func aBulkSaveAfterAPurgeStartsFromTheHorizon() async throws {
        let dir = TempDirectory(), other = TempDirectory()
        let store = try await Store.temporary(dir), peer = try await Store.temporary(other)
        let inc = try await store.createZone(notes).incarnation
        try await peer.createZone(notes, incarnation: inc)
        // The purged tombstone names a write of another store.
        try await store.apply(remoteChanges: [try await peer.save(note("gone", "x"))])
        try await store.delete(Record.ID(name: "gone", zone: notes))
        #expect(try await store.purgeTombstones() == 1)
        let horizon = try await store.purgeHorizon(of: notes)
        let saved = try await store.modify(saving: (0..<600).map { note("n\($0)", "t") })
        #expect(saved.savedRecords.count == 600)
        #expect(saved.savedRecords.allSatisfy { horizon.isDominated(by: $0.versionVector) })
    }
}
