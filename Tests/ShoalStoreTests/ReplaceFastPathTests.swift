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
        var rng = SplitMix64(seed: seed)
        let clock = FakeClock()
        let dirs = [TempDirectory(), TempDirectory(), TempDirectory()]
        var nodes = [Store]()
        for d in dirs { nodes.append(try await Store.temporary(d) { $0.wallClock = clock.read }) }
        let inc = NodeID.random(using: &rng)
        for n in nodes { try await n.createZone(notes, incarnation: inc) }
        var versions = [Record]()
        var tokens = [[ChangeToken?]](repeating: [nil, nil, nil], count: 3)
        for _ in 0..<150 {
            let i = Int(rng.next() % 3)
            let n = nodes[i]
            let id = Record.ID(name: "r\(rng.next() % 6)", zone: notes)
            switch rng.next() % 6 {
            case 0, 1, 2:
                var r = (try? await n.record(for: id)) ?? Record(recordType: "Note", id: id)
                r["f\(rng.next() % 4)"] = rng.next() % 5 == 0 ? nil : .int64(Int64(rng.next() % 100))
                if let s = try? await n.save(r, policy: .changedKeys) { versions.append(s) }
            case 3:
                try? await n.delete(id)
            default:
                let j = (i + 1 + Int(rng.next() % 2)) % 3
                let page = try await nodes[j].changes(in: notes, since: tokens[i][j], limit: 5)
                try await n.apply(remoteChanges: page.records)
                versions += page.records
                tokens[i][j] = page.token
            }
        }
        for n in nodes { versions += try await n.changes(in: notes, since: nil, limit: 1_000).records }
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
                        #expect(merged.encoded() == new.encoded(), "seed \(seed): merge(\(old), \(new)) is not the dominating version")
                    case .equal:
                        #expect(old.encoded() == new.encoded(), "seed \(seed): equal vectors, different versions of \(old.id)")
                    case .concurrent:
                        concurrent += 1
                    case .before:
                        break
                    }
                }
            }
        }
        #expect(dominated > 50 && concurrent > 0, "seed \(seed): history too small (\(dominated) dominated, \(concurrent) concurrent pairs)")
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
