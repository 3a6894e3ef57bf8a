// SyncNodeTests: focused replication behaviours — first sync, live push, lines, resumption, echo, conflicts.

import Foundation
import Testing
import ShoalSamples
import ShoalStore
import ShoalWire
@testable import ShoalSync

@Suite struct SyncNodeTests {
    static let notes = RecordZone.ID(name: "notes")

    func note(_ name: String, _ fields: [String: FieldValue]) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: Self.notes))
        for (k, v) in fields { r[k] = v }
        return r
    }

    @Test func twoNodesConverge() async throws {
        let sim = try await Simulation(seed: 1, nodes: 2)
        try await sim.nodes[0].store.createZone(Self.notes)
        for i in 0..<10 { _ = try await sim.nodes[0].store.save(note("n\(i)", ["i": .int64(Int64(i))])) }
        try await sim.connect(0, 1)
        #expect(try await sim.runUntilQuiet())
        #expect(sim.log.isEmpty, "\(sim.log)")
        let s0 = try await sim.state(of: Self.notes, on: 0), s1 = try await sim.state(of: Self.notes, on: 1)
        #expect(s0.count == 10)
        #expect(s0 == s1)
    }
}
