// ReplaceFastPathTests: apply replaces a stored version by an incoming one whose vector dominates
// it without merging. That is only right if merging would give the incoming version byte for byte:
// checked here on every dominated pair of seeded random three-node histories.

import Testing
import ShoalStore
import ShoalWire
import ShoalSamples

@Suite struct ReplaceFastPathTests {
    /// Every version three nodes produce while editing, deleting and syncing one zone at random.
    static func history(seed: UInt64) async throws -> [Record] {
        let history = try await RandomHistory(seed: seed, steps: 150, names: 6, keepSynced: true)
        var versions = history.versions
        for n in history.nodes { versions += try await n.changes(in: notes, since: nil, limit: 1_000).records }
        return versions
    }

    @Test(arguments: [11 as UInt64, 12, 13, 14, 15])
    func mergeOfADominatedVersionIsTheDominatingOne(seed: UInt64) async throws {
        let versions = try await Self.history(seed: seed)
        var byID = [Record.ID: [Record]]()
        for v in versions { byID[v.id, default: []].append(v) }
        var dominated = 0, concurrent = 0
        for (_, vs) in byID {
            for old in vs {
                for new in vs {
                    switch new.versionVector.compare(old.versionVector) {
                    case .after:
                        dominated += 1
                        let merged = try Store.merged(old, new)
                        #expect(
                            merged.encoded() == new.encoded(),
                            "seed \(seed): merge(\(old), \(new)) is not the dominating version")
                    case .equal:
                        #expect(
                            old.encoded() == new.encoded(),
                            "seed \(seed): equal vectors, different versions of \(old.id)")
                    case .concurrent:
                        concurrent += 1
                    case .before:
                        break
                    }
                }
            }
        }
        #expect(
            dominated > 50 && concurrent > 0,
            "seed \(seed): history too small (\(dominated) dominated, \(concurrent) concurrent pairs)")
    }

    /// Tombstones and referrers inserted straight into a store that never held them still cascade,
    /// whatever the order they arrive in.
    @Test func insertedTombstonesAndReferrersCascade() async throws {
        let da = TempDirectory()
        let a = try await Store.temporary(da)
        let inc = try await a.createZone(notes).incarnation
        let folder = try await a.save(note("folder", "F"))
        var child = note("child", "C")
        child["folder"] = .reference(Reference(recordID: folder.id, action: .deleteSelf))
        let liveChild = try await a.save(child)
        try await a.delete(folder.id)
        let tombs = try await a.changes(in: notes, since: nil).records
        let folderTomb = try #require(tombs.first { $0.id == folder.id })
        #expect(folderTomb.isDeleted)

        // One batch: the live child, then its target's tombstone (both new here).
        let db = TempDirectory()
        let b = try await Store.temporary(db)
        try await b.createZone(notes, incarnation: inc)
        let r = try await b.apply(remoteChanges: [liveChild, folderTomb])
        #expect(r.inserted == 2 && r.cascaded == 1)
        #expect(try await b.allRecordIDs(in: notes).isEmpty)

        // Two batches, the tombstone first: the child arrives pointing at a deleted record.
        let dc = TempDirectory()
        let c = try await Store.temporary(dc)
        try await c.createZone(notes, incarnation: inc)
        #expect(try await c.apply(remoteChanges: [folderTomb]).inserted == 1)
        let r2 = try await c.apply(remoteChanges: [liveChild])
        #expect(r2.inserted == 1 && r2.cascaded == 1)
        #expect(try await c.allRecordIDs(in: notes).isEmpty)
        // Both end as a does: the same feed contents, byte for byte.
        let want = try await a.changes(in: notes, since: nil).records.sorted { $0.id < $1.id }.map(\.id)
        #expect(try await b.changes(in: notes, since: nil).records.sorted { $0.id < $1.id }.map(\.id) == want)
    }
}
