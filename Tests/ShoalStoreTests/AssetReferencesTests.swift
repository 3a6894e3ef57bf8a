// AssetReferencesTests: `asset_refs` follows every write — saves, changes, deletions, versions
// applied from peers, merges with concurrent slots, zone deletions — so the zones that reference
// an asset are one indexed read away (Spec/replication.md §3.7).

import Testing
import ShoalStore
import ShoalWire

@Suite struct AssetReferencesTests {
    static func asset(_ n: UInt8, size: Int64 = 1000) -> Asset {
        Asset(hash: ContentHash(bytes: [UInt8](repeating: n, count: 32))!, size: size)
    }

    static func holding(_ name: String, _ value: FieldValue, zone: RecordZone.ID = notes) -> Record {
        var r = Record(recordType: "Note", id: Record.ID(name: name, zone: zone))
        r["file"] = value
        return r
    }

    @Test func referencesFollowSavesChangesDeletionsAndZoneDeletions() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir)
        let other = RecordZone.ID(name: "other")
        try await store.createZone(notes)
        try await store.createZone(other)
        let (x, y, z) = (Self.asset(1), Self.asset(2), Self.asset(3))
        var a = try await store.save(Self.holding("a", .asset(x)))
        try await store.save(Self.holding("b", .list(.asset([x, y]))))
        try await store.save(Self.holding("c", .asset(x), zone: other))
        #expect(try await store.zones(referencing: x) == [notes, other])
        #expect(try await store.zones(referencing: y) == [notes])
        #expect(try await store.zones(referencing: z) == [])
        // The same hash with another size is another asset.
        #expect(try await store.zones(referencing: Self.asset(1, size: 999)) == [])

        let before = store.assetReferenceRemovals
        a["file"] = .asset(z)
        try await store.save(a)
        #expect(try await store.zones(referencing: z) == [notes])
        #expect(try await store.zones(referencing: x) == [notes, other], "b still references x in notes")
        #expect(store.assetReferenceRemovals > before)
        try await store.delete(Record.ID(name: "b", zone: notes))
        #expect(try await store.zones(referencing: x) == [other])
        #expect(try await store.zones(referencing: y) == [])
        try await store.deleteZone(other)
        #expect(try await store.zones(referencing: x) == [])
        #expect(try await store.zones(referencing: z) == [notes])

        // Kept across reopening (it is a table, not memory).
        let reopened = try await Store.temporary(dir)
        #expect(try await reopened.zones(referencing: z) == [notes])
    }

    /// Versions applied from a peer are indexed like saves, and a merge that keeps two concurrent
    /// values of a field references both (either may become the field's value).
    @Test func appliedVersionsAndConcurrentSlotsAreReferences() async throws {
        let d1 = TempDirectory(), d2 = TempDirectory()
        let a = try await Store.temporary(d1)
        let b = try await Store.temporary(d2)
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        let (x, y, z) = (Self.asset(1), Self.asset(2), Self.asset(3))
        let v1 = try await a.save(Self.holding("n", .asset(x)))
        try await b.apply(remoteChanges: [v1])
        #expect(try await b.zones(referencing: x) == [notes])
        var ea = v1, eb = v1
        ea["file"] = .asset(y)
        eb["file"] = .asset(z)
        try await a.save(ea)
        try await a.apply(remoteChanges: [try await b.save(eb)])
        let merged = try await a.record(for: v1.id)
        #expect(merged.slots(for: "file").count == 2, "\(merged)")
        #expect(try await a.zones(referencing: y) == [notes])
        #expect(try await a.zones(referencing: z) == [notes])
        #expect(try await a.zones(referencing: x) == [])
    }
}
