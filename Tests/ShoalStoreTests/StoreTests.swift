// StoreTests: opening a store, its identity and clock across restarts, zones and their scopes.

import Testing
import ShoalStore
import ShoalWire

@Suite struct StoreTests {
    @Test func identityAndClockPersistAcrossReopen() async throws {
        let dir = TempDirectory()
        var node: NodeID
        var last: HLC
        do {
            let store = try await Store.temporary(dir)
            node = store.nodeID
            try await store.createZone(notes)
            _ = try await store.save(note("a", "A"))
            last = await store.lastTimestamp
        }
        // A clock that reads far in the past must not make timestamps go backwards.
        let store = try await Store.temporary(dir) { $0.wallClock = { 1 } }
        #expect(store.nodeID == node)
        let saved = try await store.save(note("b", "B"))
        #expect(saved.versionVector[node] > last)
        let other = TempDirectory()
        let fresh = try await Store.temporary(other)
        #expect(fresh.nodeID != node)
    }

    @Test func zonesCreateFetchDeleteWithScopes() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        let shared = RecordZone.ID(name: "team", owner: "alice")
        let a = try await store.createZone(notes)
        try await store.createZone(shared, scope: .shared)
        try await store.createZone(RecordZone.ID(name: "board"), scope: .public)
        #expect(await store.zones().count == 3)
        #expect(await store.zones(in: .shared).map(\.id) == [shared])
        #expect(try await store.zone(notes).incarnation == a.incarnation)
        // Creating again is a no-op.
        #expect(try await store.createZone(notes).incarnation == a.incarnation)

        _ = try await store.save(note("n1", "Hi"))
        try await store.deleteZone(notes)
        await expectCode(.zoneNotFound) { _ = try await store.zone(notes) }
        await expectCode(.zoneNotFound) { _ = try await store.save(note("n2", "x")) }
        await expectCode(.zoneNotFound) { try await store.deleteZone(notes) }
        // Re-creation is a new, empty incarnation.
        let b = try await store.createZone(notes)
        #expect(b.incarnation != a.incarnation)
        #expect(try await store.allRecordIDs(in: notes).isEmpty)
        await expectCode(.invalidArguments) { try await store.createZone(RecordZone.ID(name: "")) }
    }
}
