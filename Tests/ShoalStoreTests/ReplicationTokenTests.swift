// ReplicationTokenTests: the compact tokens replication hands out resume exactly, carry the purge
// no vector while the zone has purged nothing, and the purge horizon check stays as it was.

import Testing
import ShoalWire
@testable import ShoalStore

@Suite struct ReplicationTokenTests {
    /// A page for a peer: its token's vector is empty before any purge, not the zone's.
    @Test func aReplicationTokenCarriesTheHorizonAndResumesExactly() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        try await store.modify(saving: (0..<10).map { note("n\($0)", "first") })
        let full = try await store.changes(in: notes, since: nil)
        let compact = try await store.changes(in: notes, since: nil, limit: 1_000, maxBytes: .max, compactToken: true)
        #expect(compact.records.map(\.id) == full.records.map(\.id))
        let fullVector = try full.token.contents().vector, compactVector = try compact.token.contents().vector
        let zoneVector = try await store.zone(notes).versionVector
        #expect(fullVector == zoneVector && !fullVector.isEmpty)
        #expect(compactVector.isEmpty, "\(compactVector)")
        #expect(compact.token.bytes.count < full.token.bytes.count)
        // It resumes by the store's sequence: only what came after.
        try await store.modify(saving: [note("n3", "second"), note("n10", "new")], policy: .allKeys)
        let next = try await store.changes(
            in: notes, since: compact.token, limit: 1_000, maxBytes: .max, compactToken: true)
        #expect(Set(next.records.map(\.id.name)) == ["n3", "n10"])
        let encoded = try #require(try await store.encodedChanges(in: notes, since: compact.token, compactToken: true))
        let encodedVector = try encoded.token.contents().vector
        #expect(encoded.count == 2 && encodedVector.isEmpty)
    }

    /// A compact token says nothing about purges, so a purge after it expires it; once the zone
    /// has a purge horizon, replication tokens carry the zone's vector as application tokens do.
    @Test func aPurgeExpiresACompactTokenAndLaterTokensAreFull() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        try await store.createZone(notes)
        try await store.modify(saving: (0..<6).map { note("n\($0)", "first") })
        let token = try await store.changes(in: notes, since: nil, limit: 1_000, maxBytes: .max, compactToken: true)
            .token
        try await store.delete(Record.ID(name: "n1", zone: notes))
        let vector = try await store.zone(notes).versionVector
        try await store.acknowledge(peer: NodeID.random(), zone: notes, vector: vector)
        #expect(try await store.purgeTombstones() == 1)
        await expectCode(.changeTokenExpired) {
            _ = try await store.changes(in: notes, since: token, limit: 1_000, maxBytes: .max, compactToken: true)
        }
        let after = try await store.changes(in: notes, since: nil, limit: 1_000, maxBytes: .max, compactToken: true)
            .token
        let afterVector = try after.contents().vector
        #expect(afterVector == vector, "\(afterVector)")
        let resumed = try await store.changes(in: notes, since: after, limit: 1_000, maxBytes: .max, compactToken: true)
        #expect(resumed.records.isEmpty)
    }
}
