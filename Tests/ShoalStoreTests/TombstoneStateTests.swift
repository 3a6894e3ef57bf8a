// TombstoneStateTests: what a zone keeps for deletions, and which known peers keep it.

import Testing
import ShoalWire
import ShoalStore

@Suite struct TombstoneStateTests {
    /// Two known peers; one has acknowledged the deletions, one has not: the tombstones are kept
    /// for the second, and go (raising the horizon) once it acknowledges too.
    @Test func tombstonesAreKeptForThePeersThatHaveNotAcknowledgedThem() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        try await store.modify(saving: (0..<5).map { note("n\($0)", "x") })
        let before = try await store.zone(notes).versionVector
        let early = NodeID.random(), late = NodeID.random()
        try await store.acknowledge(peer: late, zone: notes, vector: before)
        for i in 0..<3 { try await store.delete(Record.ID(name: "n\(i)", zone: notes)) }
        try await store.acknowledge(peer: early, zone: notes, vector: try await store.zone(notes).versionVector)

        let held = try await store.tombstoneState(of: notes)
        #expect(held.liveRecords == 2 && held.tombstones == 3 && held.horizon.isEmpty)
        #expect(Set(held.knownPeers) == [early, late])
        #expect(held.heldBackBy == [late: 3], "\(held.heldBackBy)")
        #expect(try await store.purgeTombstones() == 0)

        try await store.acknowledge(peer: late, zone: notes, vector: try await store.zone(notes).versionVector)
        #expect(try await store.tombstoneState(of: notes).heldBackBy.isEmpty)
        #expect(try await store.purgeTombstones() == 3)
        let after = try await store.tombstoneState(of: notes)
        #expect(after.liveRecords == 2 && after.tombstones == 0 && !after.horizon.isEmpty)
    }
}
