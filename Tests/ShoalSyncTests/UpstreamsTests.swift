// UpstreamsTests: in a full mesh a change reaches each node once, from its author; a lost upstream
// makes the others send what they left out for it.

import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct UpstreamsTests {
    static let notes = RecordZone.ID(name: "notes")

    func note(_ name: String) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.notes))
        r["title"] = .string(name)
        return r
    }

    @Test func aChangeInAFullMeshReachesEachNodeOnceFromItsAuthor() async throws {
        let n = 4
        let sim = try await Simulation(seed: 0x0F5E, nodes: n)
        try await sim.nodes[0].store.createZone(Self.notes)
        for a in 0..<n { for b in (a + 1)..<n { try await sim.connect(a, b) } }
        #expect(try await sim.runUntilQuiet())
        _ = try await sim.nodes[1].store.save(note("warm-up"))
        try await sim.notifyChanges(node: 1)
        #expect(try await sim.runUntilQuiet())
        var before = [SyncNode.Statistics]()
        for i in 0..<n { before.append(await sim.nodes[i].sync.statistics) }
        _ = try await sim.nodes[0].store.save(note("one"))
        try await sim.notifyChanges(node: 0)
        #expect(try await sim.runUntilQuiet())
        for i in 1..<n {
            let s = await sim.nodes[i].sync.statistics
            #expect(s.recordsReceived - before[i].recordsReceived == 1, "node \(i) received the change more than once")
            #expect(
                s.batchesReceived - before[i].batchesReceived == 1, "node \(i) was sent batches that carried nothing")
        }
    }

    /// Node 1 leaves node 0's change out for node 2 (node 0 delivers it itself), then the link
    /// from node 0 to node 2 breaks with the change still on it: node 2 tells node 1, which
    /// rewinds and sends it. No link is re-opened meanwhile.
    @Test func whatWasLeftOutForALostUpstreamIsSentWhenItIsLost() async throws {
        let sim = try await Simulation(seed: 0x1057, nodes: 3)
        try await sim.nodes[0].store.createZone(Self.notes)
        for a in 0..<3 { for b in (a + 1)..<3 { try await sim.connect(a, b) } }
        #expect(try await sim.runUntilQuiet())
        // A first change everywhere, so every subscription has been caught up (upstreams known).
        _ = try await sim.nodes[0].store.save(note("first"))
        try await sim.notifyChanges(node: 0)
        #expect(try await sim.runUntilQuiet())

        let lost = note("on the broken link")
        _ = try await sim.nodes[0].store.save(lost)
        try await sim.notifyChanges(node: 0)
        // Node 0's batch reaches node 1 only; node 1 leaves the version out for node 2.
        let l01 = try #require(sim.links.firstIndex { Set([$0.a, $0.b]) == Set([0, 1]) })
        try await sim.deliver(link: l01, toB: sim.links[l01].a == 0)
        #expect((try? await sim.nodes[1].store.record(for: lost.id)) != nil)
        let l12 = try #require(sim.links.firstIndex { Set([$0.a, $0.b]) == Set([1, 2]) })
        while try await sim.step(link: l12) {}
        #expect(
            (try? await sim.nodes[2].store.record(for: lost.id)) == nil, "node 1 relayed what node 0 delivers itself")
        // The link from node 0 to node 2 breaks with the change on it.
        let l02 = try #require(sim.links.firstIndex { Set([$0.a, $0.b]) == Set([0, 2]) })
        await sim.reset(l02)
        #expect(try await sim.runUntilQuiet(reconnect: false))
        #expect(try await sim.nodes[2].store.record(for: lost.id)["title"] == .string("on the broken link"))
    }
}
