// KnowledgeDeltaTests: batches and acknowledgements state only the knowledge their subscription
// has not stated yet, and the union each side keeps is the whole.

import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct KnowledgeDeltaTests {
    static let notes = RecordZone.ID(name: "notes")

    func note(_ name: String) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.notes))
        r["title"] = .string(name)
        return r
    }

    /// Three writers, then one live change from node 0 to node 1: its batch states one entry (node
    /// 0's), and node 1's acknowledgement one too; what each side keeps is the whole vector.
    @Test func aLiveChangeStatesOnlyTheEntryThatMoved() async throws {
        let sim = try await Simulation(seed: 0xD17A, nodes: 3)
        try await sim.nodes[0].store.createZone(Self.notes)
        try await sim.connect(0, 1)
        try await sim.connect(1, 2)
        try await sim.connect(0, 2)
        #expect(try await sim.runUntilQuiet())
        for n in 0..<3 { _ = try await sim.nodes[n].store.save(note("from\(n)")) }
        for n in 0..<3 { try await sim.notifyChanges(node: n) }
        #expect(try await sim.runUntilQuiet())
        let whole = try await sim.nodes[0].store.zone(Self.notes).versionVector
        #expect(whole.entries.count == 3)

        // One live change first: node 0 left out node 2's write for node 1 (node 2 delivers it
        // itself, §3.9), so what node 1 knows of node 2 reaches node 0 with this one's
        // acknowledgement; from then on each side states only what moved.
        _ = try await sim.nodes[0].store.save(note("warm-up"))
        try await sim.notifyChanges(node: 0)
        #expect(try await sim.runUntilQuiet())

        let to1 = try sim.connection(of: 0, to: 1), from0 = try sim.connection(of: 1, to: 0)
        _ = try await sim.nodes[0].store.save(note("live"))
        let out = await sim.nodes[0].sync.zoneChanged(Self.notes)
        // Past its first batch the subscription's batches name its number (§3.5.4).
        let frame = try #require(
            out[to1]?.lazy.compactMap { if case .send(let f) = $0, f.type == .liveChanges { f } else { nil } }.first,
            "\(out)")
        // Its vectors are written against the knowledge the subscription stated, which node 1 holds.
        let stated = try #require(await sim.nodes[1].sync.sessions[from0]?.inbound[Self.notes]?.vectorReference)
        let batch = try LiveChangesMessage(decoding: frame.payload, zone: Self.notes, reference: stated)
        let node0 = sim.nodes[0].store.nodeID
        #expect(
            batch.isCaughtUp && batch.knowledge?.entries.map(\.node) == [node0],
            "\(String(describing: batch.knowledge))")

        let answer = await sim.nodes[1].sync.receive(frame, on: from0)
        let ackFrame = try #require(
            answer[from0]?.lazy.compactMap { if case .send(let f) = $0, f.type == .acknowledgement { f } else { nil } }
                .first, "\(answer)")
        let ack = try AcknowledgementMessage(decoding: ackFrame.payload)
        #expect(ack.knowledge.entries.map(\.node) == [node0], "\(ack.knowledge)")
        // The unions are the whole: node 1 adopted node 0's knowledge, node 0 skips by node 1's.
        let k1 = await sim.nodes[1].sync.knowledge(of: Self.notes)
        #expect(await sim.nodes[0].sync.knowledge(of: Self.notes).isDominated(by: k1), "\(k1)")
        _ = await sim.nodes[0].sync.receive(ackFrame, on: to1)
        let peerKnowledge = await sim.nodes[0].sync.sessions[to1]?.outbound[Self.notes]?.peerKnowledge
        #expect(peerKnowledge.map { k1.isDominated(by: $0) } == true, "\(String(describing: peerKnowledge))")
    }
}
