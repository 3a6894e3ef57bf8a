// LiveBatchingTests: a subscription's news waits a bounded moment so that commits made close
// together travel in one batch (Spec/replication.md §4 item 2).

import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct LiveBatchingTests {
    static let notes = RecordZone.ID(name: "notes")

    func note(_ name: String) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.notes))
        r["title"] = .string(name)
        return r
    }

    /// Two connected nodes, caught up, node 0 holding the zone; live batching waits `delay`.
    func twoNodes(
        seed: UInt64, delay: Duration = .milliseconds(50), _ configure: (inout SyncConfiguration) -> Void = { _ in }
    ) async throws -> Simulation {
        var c = SyncConfiguration()
        c.liveBatchDelay = delay
        configure(&c)
        let sim = try await Simulation(seed: seed, nodes: 2, configuration: c)
        try await sim.nodes[0].store.createZone(Self.notes)
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        return sim
    }

    /// Saves `name` on node 0 and tells its sync node; returns the `changes` batches it sends to node 1 now.
    func commit(_ name: String, _ sim: Simulation) async throws -> [[UInt8]] {
        _ = try await sim.nodes[0].store.save(note(name))
        let out = await sim.nodes[0].sync.zoneChanged(Self.notes)
        try await sim.route(out, from: 0)
        let to1 = try sim.connection(of: 0, to: 1)
        return (out[to1] ?? []).compactMap {
            if case .send(let f) = $0, (f.type == .changes || f.type == .liveChanges) { f.payload } else { nil }
        }
    }

    /// The first commit after a quiet spell goes at once; the next ones, made while its batch is
    /// unacknowledged, wait, and travel together in one batch when the acknowledgement arrives.
    @Test func commitsWithinTheDelayTravelInOneBatch() async throws {
        let sim = try await twoNodes(seed: 0xBA7C)
        let before = await sim.nodes[1].sync.statistics
        #expect(try await commit("a", sim).count == 1)
        #expect(try await commit("b", sim).isEmpty)
        #expect(try await commit("c", sim).isEmpty)
        #expect(try await commit("d", sim).isEmpty)
        #expect(try await sim.runUntilQuiet())
        let after = await sim.nodes[1].sync.statistics
        #expect(after.recordsReceived - before.recordsReceived == 4)
        #expect(
            after.batchesReceived - before.batchesReceived == 2,
            "\(after.batchesReceived - before.batchesReceived) batches for 4 commits")
        #expect(try await sim.state(of: Self.notes, on: 0) == (try await sim.state(of: Self.notes, on: 1)))
    }

    /// A single commit held behind a batch in flight was no burst: it goes with the acknowledgement,
    /// without waiting out the delay.
    @Test func aLoneHeldCommitGoesWithTheAcknowledgement() async throws {
        let sim = try await twoNodes(seed: 0xBA80)
        #expect(try await commit("a", sim).count == 1)
        #expect(try await commit("b", sim).isEmpty)
        let start = sim.clock.now()
        while try await sim.step(link: 0) {}
        #expect(sim.clock.now() == start, "the simulated clock did not move")
        #expect(try await sim.state(of: Self.notes, on: 1)["b"] != nil, "b waited for the delay")
        #expect(await sim.nodes[0].sync.heldNewsDeadline == nil)
    }

    /// News held while the acknowledgement does not come goes once the delay is up, not before.
    @Test func heldNewsGoesWhenTheDelayIsUp() async throws {
        let sim = try await twoNodes(seed: 0xBA7D)
        #expect(try await commit("a", sim).count == 1)
        #expect(try await commit("b", sim).isEmpty)
        let deadline = try #require(await sim.nodes[0].sync.heldNewsDeadline)
        #expect(await sim.nodes[0].sync.sendHeldNews().isEmpty, "sent before its deadline")
        sim.clock.advance(49)
        #expect(await sim.nodes[0].sync.sendHeldNews().isEmpty, "sent before its deadline")
        sim.clock.advance(1)
        #expect(deadline <= sim.configuration.now())
        let out = await sim.nodes[0].sync.sendHeldNews()
        let to1 = try sim.connection(of: 0, to: 1)
        #expect(
            out[to1]?.contains {
                if case .send(let f) = $0 { f.type == .changes || f.type == .liveChanges } else { false }
            } == true, "\(out)")
        #expect(await sim.nodes[0].sync.heldNewsDeadline == nil)
        try await sim.route(out, from: 0)
        #expect(try await sim.runUntilQuiet())
        #expect(await sim.nodes[1].sync.statistics.recordsReceived >= 2)
    }

    /// Held news is bounded in size too: once the commits held could fill a batch, it goes at once,
    /// whatever the delay.
    @Test func heldNewsGoesAtOnceWhenItFillsABatch() async throws {
        let sim = try await twoNodes(seed: 0xBA7E, delay: .seconds(3600)) { $0.batchRecords = 3 }
        #expect(try await commit("a", sim).count == 1)
        #expect(try await commit("b", sim).isEmpty)
        #expect(try await commit("c", sim).isEmpty)
        #expect(try await commit("d", sim).count == 1, "three commits held fill a batch of 3")
        #expect(await sim.nodes[0].sync.heldNewsDeadline == nil)
        #expect(try await sim.runUntilQuiet())
        #expect(try await sim.state(of: Self.notes, on: 0) == (try await sim.state(of: Self.notes, on: 1)))
    }

    /// With no delay every commit goes at once, as before live batching.
    @Test func zeroDelaySendsEveryCommit() async throws {
        let sim = try await twoNodes(seed: 0xBA7F, delay: .zero)
        for name in ["a", "b", "c"] { #expect(try await commit(name, sim).count == 1) }
        #expect(await sim.nodes[0].sync.heldNewsDeadline == nil)
    }
}
