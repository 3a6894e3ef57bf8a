// ZonePurgeSyncTests: deleted zones purged once every peer announced them deleted, or after the
// retention; a node that was away comes back with a purged zone and is told it was deleted,
// and nothing brings the zone back (Spec/replication.md §4.1).

import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct ZonePurgeSyncTests {
    static let notes = RecordZone.ID(name: "notes")

    /// Three connected nodes replicating `notes` (created on node 0, with one record).
    func replicated(seed: UInt64, identities: Bool = false, configuration: SyncConfiguration = SyncConfiguration())
        async throws -> Simulation
    {
        let sim = try await Simulation(seed: seed, nodes: 3, configuration: configuration, identities: identities)
        try await sim.createSharedZone(Self.notes, on: 0)
        var r = Record(recordType: "Note", id: Record.ID(name: "n1", zone: Self.notes))
        r["title"] = .string("x")
        _ = try await sim.nodes[0].store.save(r)
        #expect(try await sim.runUntilQuiet())
        for n in 0..<3 {
            #expect(
                try await sim.nodes[n].store.zone(Self.notes).incarnation
                    == (try await sim.nodes[0].store.zone(Self.notes).incarnation))
        }
        return sim
    }

    /// Node 0 deletes the zone and says goodbye on every connection; the others follow.
    func delete(_ sim: Simulation) async throws {
        try await sim.nodes[0].sync.deleteZone(Self.notes)
        try await sim.route(await sim.nodes[0].sync.restartConnections(reason: "zone deleted"), from: 0)
    }

    /// Breaks every link and keeps the pairs apart until `allow` lists them.
    func isolate(_ sim: Simulation, allow: Set<[Int]>) async {
        while !sim.links.isEmpty { await sim.reset(0) }
        sim.partitions.removeAll()
        for a in sim.nodes.indices {
            for b in sim.nodes.indices where a < b && !allow.contains([a, b]) { sim.partitions.insert([a, b]) }
        }
    }

    /// Once all three have announced the deletion to each other, each purges the zone with no
    /// retention at all: it is no longer announced, and reconnecting brings nothing back.
    @Test func aDeletedZoneIsPurgedEverywhereOnceEveryNodeAnnouncedItDeleted() async throws {
        let sim = try await replicated(seed: 801)
        let inc = try await sim.nodes[0].store.zone(Self.notes).incarnation
        try await delete(sim)
        #expect(try await sim.runUntilQuiet())
        for n in 0..<3 {
            #expect(
                await sim.nodes[n].sync.announcedZones() == [
                    ZoneAnnouncement(zone: Self.notes, incarnation: inc, isDeleted: true)
                ], "node \(n)")
            #expect(try await sim.nodes[n].sync.zoneTombstones().map(\.waitingFor) == [[]], "node \(n)")
        }
        for n in 0..<3 {
            #expect(try await sim.nodes[n].sync.purgeTombstones(retention: nil) == 0)
            #expect(await sim.nodes[n].sync.statistics.zoneTombstonesPurged == 1, "node \(n)")
            #expect(await sim.nodes[n].sync.announcedZones().isEmpty, "node \(n) no longer announces the zone")
        }
        await isolate(sim, allow: [[0, 1], [0, 2], [1, 2]])
        #expect(try await sim.runUntilQuiet())
        for n in 0..<3 {
            #expect(await sim.nodes[n].store.zoneAnnouncements().isEmpty, "node \(n)")
            let hello = await sim.nodes[n].sync.hello(for: try sim.connection(of: n, to: (n + 1) % 3))
            #expect(hello.zones.isEmpty, "node \(n)'s hello lists no purged zone")
        }
    }

    /// While one node is away, the others delete the zone and purge it once the retention has
    /// passed. The node comes back announcing the zone live with the purged incarnation: it is
    /// told the zone was deleted and deletes its copy; no node creates the zone again; and the
    /// returning node then purges its own tombstone, both others having announced it deleted.
    @Test func aNodeAwayDuringThePurgeComesBackAndTheZoneStaysDeleted() async throws {
        let sim = try await replicated(seed: 802)
        let inc = try await sim.nodes[0].store.zone(Self.notes).incarnation
        await isolate(sim, allow: [[0, 1]])
        try await delete(sim)
        #expect(try await sim.runUntilQuiet())
        #expect(await sim.nodes[1].store.zones().isEmpty)
        // Node 2 announced the zone and has not announced its deletion: it holds the purge back.
        #expect(try await sim.nodes[0].sync.zoneTombstones().first?.waitingFor == [sim.nodes[2].store.nodeID])
        try await sim.nodes[0].sync.purgeTombstones(retention: .seconds(30))
        #expect(await sim.nodes[0].sync.statistics.zoneTombstonesPurged == 0)
        sim.clock.advance(60_000)
        for n in 0..<2 {
            try await sim.nodes[n].sync.purgeTombstones(retention: .seconds(30))
            #expect(await sim.nodes[n].sync.statistics.zoneTombstonesPurged == 1, "node \(n)")
            #expect(await sim.nodes[n].store.zoneAnnouncements().isEmpty, "node \(n)")
        }
        #expect(try await sim.nodes[2].store.zone(Self.notes).incarnation == inc, "node 2 still holds the zone live")

        // Node 2 comes back.
        sim.partitions.removeAll()
        #expect(try await sim.runUntilQuiet())
        for n in 0..<3 { #expect(await sim.nodes[n].store.zones().isEmpty, "node \(n) holds no live zone") }
        #expect(
            await sim.nodes[2].store.zoneAnnouncements() == [
                ZoneAnnouncement(zone: Self.notes, incarnation: inc, isDeleted: true)
            ])
        try await sim.nodes[2].sync.purgeTombstones(retention: nil)
        #expect(
            await sim.nodes[2].sync.statistics.zoneTombstonesPurged == 1, "nodes 0 and 1 announced it deleted to node 2"
        )
        #expect(try await sim.runUntilQuiet())
        for n in 0..<3 {
            #expect(await sim.nodes[n].store.zoneAnnouncements().isEmpty, "node \(n)")
            #expect(await sim.nodes[n].sync.announcedZones().isEmpty, "node \(n)")
        }
        // The next `zones` messages, on the same connections, no longer name the purged zone:
        // nodes that both purged it do not keep telling each other of it.
        let later = RecordZone.ID(name: "later")
        try await sim.nodes[0].sync.createZone(later)
        try await sim.route(await sim.nodes[0].sync.announceZones(), from: 0)
        #expect(try await sim.runUntilQuiet())
        for n in 0..<3 {
            for (c, _) in await sim.nodes[n].sync.connections() {
                let announced = await sim.nodes[n].sync.sessions[c]?.announced.map(\.zone)
                #expect(announced == [later], "node \(n) on \(c)")
            }
        }
    }

    /// A node that creates and deletes zones stays under its peers' `maxZones` once the
    /// deletions are purged: purged zones are no longer counted.
    @Test func purgedZonesNoLongerCountAgainstTheZoneLimit() async throws {
        var c = SyncConfiguration()
        c.maxZones = 2
        let sim = try await replicated(seed: 803, configuration: c)
        try await delete(sim)
        #expect(try await sim.runUntilQuiet())
        let other = RecordZone.ID(name: "other")
        try await sim.nodes[0].sync.createZone(other)
        try await sim.route(await sim.nodes[0].sync.announceZones(), from: 0)
        #expect(try await sim.runUntilQuiet())
        try await sim.nodes[0].sync.deleteZone(other)
        try await sim.route(await sim.nodes[0].sync.restartConnections(reason: "zone deleted"), from: 0)
        #expect(try await sim.runUntilQuiet())
        for n in 0..<3 {
            #expect(await sim.nodes[n].store.zoneAnnouncements().count == 2, "node \(n) holds two zone tombstones")
        }
        for n in 0..<3 { try await sim.nodes[n].sync.purgeTombstones(retention: nil) }
        let third = RecordZone.ID(name: "third")
        try await sim.nodes[0].sync.createZone(third)
        try await sim.route(await sim.nodes[0].sync.announceZones(), from: 0)
        #expect(try await sim.runUntilQuiet())
        for n in 1..<3 {
            #expect(await sim.nodes[n].store.zones().map(\.id) == [third], "node \(n) creates the new zone: \(sim.log)")
        }
    }

    /// A shared zone: the owner's signed deletion reaches a member that was away after the
    /// owner and the other member purged the zone, and no one creates it again.
    @Test func aMemberAwayDuringThePurgeOfASharedZoneIsToldOfTheDeletion() async throws {
        let sim = try await replicated(seed: 804, identities: true)
        #expect(await sim.nodes[2].sync.share(of: Self.notes) != nil)
        await isolate(sim, allow: [[0, 1]])
        try await delete(sim)
        #expect(try await sim.runUntilQuiet())
        #expect(await sim.nodes[1].store.zones().isEmpty)
        sim.clock.advance(60_000)
        for n in 0..<2 { try await sim.nodes[n].sync.purgeTombstones(retention: .seconds(30)) }
        sim.partitions.removeAll()
        #expect(try await sim.runUntilQuiet())
        for n in 0..<3 { #expect(await sim.nodes[n].store.zones().isEmpty, "node \(n) holds no live zone") }
        #expect(await sim.nodes[2].store.zoneAnnouncements().map(\.isDeleted) == [true])
    }
}
