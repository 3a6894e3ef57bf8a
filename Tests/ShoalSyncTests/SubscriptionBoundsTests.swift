// SubscriptionBoundsTests: what one connection's subscriptions may make a node hold for it.

import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct SubscriptionBoundsTests {
    static let notes = RecordZone.ID(name: "notes")

    /// Two nodes replicating `notes`, node 1 subscribed to node 0; node 0's end of the link.
    func pair() async throws -> (Simulation, ConnectionID) {
        let sim = try await Simulation(seed: 0x5B5, nodes: 2)
        try await sim.nodes[0].store.createZone(Self.notes)
        var r = Record(recordType: "Note", id: Record.ID(name: "a", zone: Self.notes))
        r["title"] = .string("first")
        _ = try await sim.nodes[0].store.save(r)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        let link = try #require(sim.links.first)
        return (sim, link.a == 0 ? link.connA : link.connB)
    }

    /// A second `subscribe` to a zone the connection already follows restarted a window of
    /// batches each time: a client that sent many and read nothing grew the node without end.
    @Test func aSecondSubscribeToTheSameZoneIsRefused() async throws {
        let (sim, conn) = try await pair()
        #expect(await sim.nodes[0].sync.sessions[conn]?.outbound[Self.notes] != nil)
        let info = try await sim.nodes[0].store.zone(Self.notes)
        let again = SubscribeMessage(
            zone: Self.notes, incarnation: info.incarnation, token: nil, knowledge: VersionVector())
        let out = await sim.nodes[0].sync.receive(Frame(type: .subscribe, payload: again.encoded()), on: conn)
        let error = out[conn, default: []].lazy.compactMap { if case .close(let e) = $0 { e } else { nil } }.first
        #expect(error?.code == "protocolViolation", "\(out)")
        #expect(
            !out[conn, default: []].contains { if case .send(let f) = $0 { f.type == .changes } else { false } },
            "no batch is served for the second subscribe")
    }

    /// The window a subscriber asks for is capped by the server's `maxServedWindow`: batches
    /// in flight to one subscription are at most that many.
    @Test func theWindowIsCappedByTheServer() async throws {
        let (sim, conn) = try await pair()
        // A zone node 0 has not announced yet, subscribed to by hand with a window of 1,000.
        let lab = RecordZone.ID(name: "lab")
        try await sim.nodes[0].store.createZone(lab)
        let info = try await sim.nodes[0].store.zone(lab)
        let m = SubscribeMessage(
            zone: lab, incarnation: info.incarnation, token: nil, knowledge: VersionVector(), window: 1_000)
        _ = await sim.nodes[0].sync.receive(Frame(type: .subscribe, payload: m.encoded()), on: conn)
        let window = await sim.nodes[0].sync.sessions[conn]?.outbound[lab]?.window
        #expect(window == UInt64(SyncConfiguration().maxServedWindow), "window \(window.map { "\($0)" } ?? "none")")
    }

    /// A connection the transport holds (too much waiting for its socket) gets no news of a
    /// change until the transport says it has drained; then it gets all of it.
    @Test func newsForAHeldConnectionWaitsUntilItDrains() async throws {
        let (sim, conn) = try await pair()
        var r = Record(recordType: "Note", id: Record.ID(name: "b", zone: Self.notes))
        r["title"] = .string("second")
        _ = try await sim.nodes[0].store.save(r)
        // Live batches write their vectors against the knowledge the subscription stated so far.
        let stated = await sim.nodes[0].sync.sessions[conn]?.outbound[Self.notes]?.vectorReference ?? VersionVector()
        func batches(_ out: [ConnectionID: [SyncOutput]]) -> [ChangesMessage] {
            out[conn, default: []].compactMap { o -> ChangesMessage? in
                guard case .send(let f) = o else { return nil }
                if f.type == .changes { return try? ChangesMessage(decoding: f.payload) }
                guard f.type == .liveChanges,
                    let live = try? LiveChangesMessage(decoding: f.payload, zone: Self.notes, reference: stated)
                else { return nil }
                return live.changes(incarnation: NodeID(high: 0, low: 0), token: ChangeToken(bytes: []))
            }
        }
        let held = await sim.nodes[0].sync.zoneChanged(Self.notes, holding: [conn])
        #expect(batches(held).isEmpty, "\(held)")
        let resumed = await sim.nodes[0].sync.resumeServing(conn)
        #expect(batches(resumed.outputs).flatMap(\.records).map(\.id.name) == ["b"], "\(resumed)")
        #expect(!resumed.more)
        // Nothing more to send: a second drain sends nothing.
        #expect(batches(await sim.nodes[0].sync.resumeServing(conn).outputs).isEmpty)
    }
}
