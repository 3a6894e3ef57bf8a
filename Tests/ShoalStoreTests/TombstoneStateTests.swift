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

    /// A purge frees the pages its tombstones used: the bytes in use fall, free pages appear.
    @Test func storageUsageShowsWhatAPurgeFrees() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        let empty = try await store.storageUsage()
        let body = String(repeating: "text ", count: 200)
        try await store.modify(saving: (0..<2_000).map { note("n\($0)", body) })
        let full = try await store.storageUsage()
        #expect(full.usedBytes > empty.usedBytes + 1_000_000, "\(empty) → \(full)")
        try await store.modify(deleting: (0..<2_000).map { Record.ID(name: "n\($0)", zone: notes) }, policy: .allKeys)
        try await store.acknowledge(
            peer: NodeID.random(), zone: notes, vector: try await store.zone(notes).versionVector)
        #expect(try await store.purgeTombstones() == 2_000)
        let purged = try await store.storageUsage()
        #expect(purged.usedBytes < full.usedBytes / 2 && purged.freeBytes > 0, "\(full) → \(purged)")
        #expect(purged.fileBytes == purged.usedBytes + purged.freeBytes)
    }
}
