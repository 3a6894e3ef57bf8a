// PurgeHorizonTests: what replication does around a purge horizon — a resync hands it over, an
// expired token goes on from knowledge that covers it, and knowledge that does not is held back.

import Foundation
import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct PurgeHorizonTests {
    static let notes = RecordZone.ID(name: "notes")

    func note(_ name: String, _ title: String) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.notes))
        r["title"] = .string(title)
        return r
    }

    /// Breaks every link and keeps the pairs apart until `allow` lists them.
    func isolate(_ sim: Simulation, allow: Set<[Int]>) async {
        while !sim.links.isEmpty { await sim.reset(0) }
        sim.partitions.removeAll()
        for a in sim.nodes.indices {
            for b in sim.nodes.indices where a < b && !allow.contains([a, b]) { sim.partitions.insert([a, b]) }
        }
    }

    /// Node 0 deletes r1 and purges it while node 1 is away; node 2 keeps the tombstone. Node 1
    /// comes back to node 0 alone: its full resync deletes its stale r1 and hands it node 0's purge
    /// horizon. When node 1 then creates r1 again, the new record supersedes the tombstone node 2
    /// still holds, and all three end equal. Without the horizon, node 1's new r1 was concurrent
    /// with that tombstone: node 2 merged the deleted version's fields into it, node 0 held it
    /// alone, and they stayed apart.
    @Test func aNodeThatResyncedCreatesAPurgedRecordAgainAndEveryNodeAgrees() async throws {
        let sim = try await Simulation(seed: 41, nodes: 3)
        try await sim.nodes[0].store.createZone(Self.notes)
        var first = note("r1", "first")
        first["extra"] = .string("only in the deleted version")
        _ = try await sim.nodes[0].store.save(first)
        _ = try await sim.nodes[0].store.save(note("r2", "stays"))
        for a in 0..<3 { for b in (a + 1)..<3 { try await sim.connect(a, b) } }
        #expect(try await sim.runUntilQuiet())

        // Node 1 leaves; node 0 deletes r1, node 2 receives the tombstone and keeps it.
        await isolate(sim, allow: [[0, 2]])
        try await sim.connect(0, 2)
        try await sim.nodes[0].store.delete(first.id)
        try await sim.notifyChanges(node: 0)
        #expect(try await sim.runUntilQuiet(reconnect: false))
        #expect(try await sim.nodes[2].store.storedVersions(of: [first.id])[first.id]?.isDeleted == true)

        // The retention passes on node 0, which purges; node 2 does not purge.
        sim.clock.advance(60_000)
        #expect(try await sim.nodes[0].sync.purgeTombstones(retention: .seconds(30)) == 1)
        let horizon = try await sim.nodes[0].store.purgeHorizon(of: Self.notes)
        #expect(!horizon.isEmpty)

        // Node 1 comes back to node 0 only and resyncs.
        await isolate(sim, allow: [[0, 1]])
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet(reconnect: false))
        #expect(await sim.nodes[1].sync.statistics.resyncsCompleted == 1)
        #expect(try await sim.nodes[1].store.storedVersions(of: [first.id])[first.id]?.isDeleted == true)
        #expect(horizon.isDominated(by: try await sim.nodes[1].store.purgeHorizon(of: Self.notes)))

        // Node 1 creates r1 again; then everyone meets.
        let again = try await sim.nodes[1].store.save(note("r1", "again"))
        #expect(horizon.isDominated(by: again.versionVector))
        try await sim.notifyChanges(node: 1)
        sim.partitions.removeAll()
        #expect(try await sim.runUntilQuiet())
        var digests = [String]()
        for n in 0..<3 {
            let r = try await sim.nodes[n].store.record(for: first.id)
            #expect(r["title"] == .string("again") && r["extra"] == nil, "node \(n): \(r)")
            digests.append("\(try await sim.nodes[n].store.digest(of: Self.notes))")
        }
        #expect(Set(digests).count == 1, "\(digests)")
    }

    /// In a zone with a share, the batch that hands a resyncing node the purge horizon proves the
    /// writes under it: node 1 resyncs from node 0, which purged its deletion of r1, and receives
    /// node 0's log through that deletion. Node 1 then creates r3, whose vector carries the
    /// horizon, and hands it to node 2, which was away for the deletion too: node 2 refuses
    /// nothing (rule 2 of Spec/authenticated-writes.md §5 holds against the log node 1 relays)
    /// and all three end equal. Before, node 1 held node 0's log only up to r2, and node 2
    /// refused the batch.
    @Test func aHandedOverHorizonIsProvenByItsWriters() async throws {
        let sim = try await Simulation(seed: 45, nodes: 3, identities: true)
        try await sim.createSharedZone(Self.notes, on: 0)
        #expect(try await sim.runUntilQuiet())
        let first = note("r1", "first")
        _ = try await sim.nodes[0].store.save(first)
        _ = try await sim.nodes[0].store.save(note("r2", "stays"))
        try await sim.notifyChanges(node: 0)
        #expect(try await sim.runUntilQuiet())

        // Node 0, alone, deletes r1 and purges it.
        await isolate(sim, allow: [])
        try await sim.nodes[0].store.delete(first.id)
        sim.clock.advance(60_000)
        #expect(try await sim.nodes[0].sync.purgeTombstones(retention: .seconds(30)) == 1)
        let writer = sim.nodes[0].store.nodeID
        let horizon = try await sim.nodes[0].store.purgeHorizon(of: Self.notes)
        #expect(horizon[writer] != .zero)

        // Node 1 resyncs from node 0 and holds node 0's log through the horizon.
        await isolate(sim, allow: [[0, 1]])
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet(reconnect: false))
        #expect(await sim.nodes[1].sync.statistics.resyncsCompleted == 1)
        #expect(horizon.isDominated(by: try await sim.nodes[1].store.purgeHorizon(of: Self.notes)))
        #expect(
            try await sim.nodes[1].store.logHead(of: writer, in: Self.notes).hlc >= horizon[writer],
            "the horizon's writes arrive with it")

        // Node 1 creates r3 over the horizon and meets node 2 alone.
        let r3 = try await sim.nodes[1].store.save(note("r3", "over the horizon"))
        #expect(horizon.isDominated(by: r3.versionVector))
        await isolate(sim, allow: [[1, 2]])
        try await sim.connect(1, 2)
        #expect(try await sim.runUntilQuiet(reconnect: false))
        #expect(await sim.nodes[2].sync.statistics.refusedBatches == 0, "\(sim.log)")
        #expect((try? await sim.nodes[2].store.record(for: r3.id)) != nil)

        sim.partitions.removeAll()
        #expect(try await sim.runUntilQuiet())
        var digests = [String]()
        for n in 0..<3 {
            #expect(await sim.nodes[n].sync.statistics.refusedBatches == 0, "node \(n): \(sim.log)")
            digests.append("\(try await sim.nodes[n].store.digest(of: Self.notes))")
        }
        #expect(Set(digests).count == 1, "\(digests)")
    }

    /// A replication token handed out before a zone's first purge expires at it. A subscriber
    /// whose knowledge covers the horizon reflects every purged deletion, so the server goes on
    /// from that knowledge instead of resetting it to a full resync.
    @Test func anExpiredTokenGoesOnFromKnowledgeThatCoversTheHorizon() async throws {
        let sim = try await Simulation(seed: 42, nodes: 2)
        try await sim.nodes[0].store.createZone(Self.notes)
        for i in 0..<20 { _ = try await sim.nodes[0].store.save(note("n\(i)", "t\(i)")) }
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        try await sim.nodes[0].store.delete(Record.ID(name: "n3", zone: Self.notes))
        try await sim.notifyChanges(node: 0)
        #expect(try await sim.runUntilQuiet())
        await sim.reset(0)
        // Node 1 has the tombstone, and its knowledge (what it acknowledged) covers it.
        let known = await sim.nodes[1].sync.knowledge(of: Self.notes)
        let tombstone = try #require(
            try await sim.nodes[0].store.storedVersions(of: [Record.ID(name: "n3", zone: Self.notes)]).values.first)
        #expect(tombstone.versionVector.isDominated(by: known))
        try await sim.nodes[0].store.removePeer(sim.nodes[1].store.nodeID, from: Self.notes)
        try await sim.nodes[0].store.acknowledge(peer: sim.nodes[1].store.nodeID, zone: Self.notes, vector: known)
        #expect(try await sim.nodes[0].sync.purgeTombstones(retention: nil) == 1)

        _ = try await sim.nodes[0].store.save(note("after", "the purge"))
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        #expect(await sim.nodes[1].sync.statistics.resyncsCompleted == 0)
        #expect(
            try await sim.nodes[1].store.record(for: Record.ID(name: "after", zone: Self.notes))["title"]
                == .string("the purge"))
        #expect(
            try await sim.nodes[0].store.digest(of: Self.notes) == (try await sim.nodes[1].store.digest(of: Self.notes))
        )
    }

    /// Node 1 writes r5 while away and comes back after node 0 purged a deletion it never saw.
    /// Node 0 takes node 1's version, but not node 1's knowledge, until node 1 has resynced: that
    /// knowledge does not cover node 0's purge horizon.
    /// A subscriber whose knowledge covers everything the server holds — it took a deletion's
    /// writes into its horizon — still gets the server's merge of its own save with that deletion.
    /// The server used to skip reading its feed for such a subscriber, and the two kept different
    /// versions for good (a purge-simulation seed).
    @Test func aMergeReachesASubscriberWhoseKnowledgeCoversTheServersFeed() async throws {
        let sim = try await Simulation(seed: 44, nodes: 2)
        let id = Record.ID(name: "r1", zone: Self.notes)
        try await sim.nodes[0].store.createZone(Self.notes)
        _ = try await sim.nodes[0].store.save(note("r1", "first"))
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        await sim.reset(0)
        // Apart: node 0 deletes r1, node 1 edits it; node 0 merges node 1's save with its deletion.
        try await sim.nodes[0].store.delete(id)
        var edit = try await sim.nodes[1].store.record(for: id)
        edit["body"] = .string("edited away")
        let save = try await sim.nodes[1].store.save(edit)
        try await sim.nodes[0].store.apply(remoteChanges: [save])
        let merged = try #require(try await sim.nodes[0].store.storedVersions(of: [id]).values.first)
        #expect(merged.heads.count == 2 && !merged.isDeleted)
        // Node 1 takes the deletion's writes into its horizon, as a resync from a node that
        // purged the deletion hands them over: its knowledge now covers node 0's whole feed.
        try await sim.nodes[1].store.adoptHorizon(merged.versionVector, of: Self.notes)
        await sim.nodes[1].sync.addKnowledge(merged.versionVector, to: Self.notes)
        #expect(merged.versionVector.isDominated(by: await sim.nodes[1].sync.knowledge(of: Self.notes)))
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        #expect(try await sim.nodes[1].store.storedVersions(of: [id]).values.first == merged)
        #expect(
            try await sim.nodes[0].store.digest(of: Self.notes) == (try await sim.nodes[1].store.digest(of: Self.notes))
        )
    }

    @Test func knowledgeThatDoesNotCoverTheHorizonIsHeldBack() async throws {
        let sim = try await Simulation(seed: 43, nodes: 2)
        try await sim.nodes[0].store.createZone(Self.notes)
        _ = try await sim.nodes[0].store.save(note("r1", "first"))
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        await sim.reset(0)
        try await sim.nodes[0].store.delete(Record.ID(name: "r1", zone: Self.notes))
        sim.clock.advance(60_000)
        #expect(try await sim.nodes[0].sync.purgeTombstones(retention: .seconds(30)) == 1)
        _ = try await sim.nodes[1].store.save(note("r5", "written away"))
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        #expect(await sim.nodes[0].sync.statistics.knowledgeHeldBackForHorizon >= 1)
        #expect(await sim.nodes[1].sync.statistics.resyncsCompleted == 1)
        #expect(
            try await sim.nodes[0].store.record(for: Record.ID(name: "r5", zone: Self.notes))["title"]
                == .string("written away"))
        #expect(
            try await sim.nodes[1].store.storedVersions(of: [Record.ID(name: "r1", zone: Self.notes)]).values.first?
                .isDeleted == true)
        #expect(
            try await sim.nodes[0].store.digest(of: Self.notes) == (try await sim.nodes[1].store.digest(of: Self.notes))
        )
    }
}
