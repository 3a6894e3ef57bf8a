// ZoneFloodTests: a peer's zone announcements cannot make a node hold more zones than it allows.

import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct ZoneFloodTests {
    /// Two connected nodes whose configuration allows `maxZones` zones from peers' announcements.
    func pair(maxZones: Int) async throws -> Simulation {
        var c = SyncConfiguration()
        c.maxZones = maxZones
        let sim = try await Simulation(seed: 0x20E5, nodes: 2, configuration: c)
        try await sim.nodes[0].store.createZone(RecordZone.ID(name: "notes"))
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        return sim
    }

    func announcement(_ names: [String]) -> Frame {
        let zones = names.sorted().map {
            ZoneAnnouncement(zone: RecordZone.ID(name: $0), incarnation: NodeID(high: 1, low: 2), isDeleted: false)
        }
        return Frame(type: .zones, payload: ZonesMessage(zones: zones).encoded())
    }

    func connection(_ sim: Simulation, of n: Int) throws -> ConnectionID {
        let link = try #require(sim.links.first)
        return link.a == n ? link.connA : link.connB
    }

    @Test func anAnnouncementBeyondTheZoneLimitCreatesNothing() async throws {
        let sim = try await pair(maxZones: 8)
        let conn = try connection(sim, of: 1)
        let before = await sim.nodes[1].store.zoneAnnouncements().count
        #expect(before == 1)
        // Eight new zones would make nine: refused whole, none created, the connection closed.
        let out = await sim.nodes[1].sync.receive(announcement((0..<8).map { "flood-\($0)" }), on: conn)
        let error = out[conn, default: []].lazy.compactMap { if case .close(let e) = $0 { e } else { nil } }.first
        #expect(error?.code == "limitExceeded", "\(out)")
        #expect(error?.message.contains("maxZones") == true, "\(error?.message ?? "")")
        #expect(await sim.nodes[1].store.zoneAnnouncements().count == before)
    }

    @Test func announcementsWithinTheLimitAreAdopted() async throws {
        let sim = try await pair(maxZones: 8)
        let conn = try connection(sim, of: 1)
        _ = await sim.nodes[1].sync.receive(announcement((0..<7).map { "more-\($0)" }), on: conn)
        #expect(await sim.nodes[1].store.zoneAnnouncements().count == 8)
    }
}
