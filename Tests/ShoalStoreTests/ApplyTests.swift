// ApplyTests: applying peers' versions — idempotence, order-insensitivity and field-level merge,
// checked on seeded random histories of three nodes (the seed is printed on failure).

import Testing
import ShoalStore
import ShoalWire
import ShoalSamples

@Suite struct ApplyTests {
    @Test func concurrentEditsMergeFieldByField() async throws {
        let d1 = TempDirectory(), d2 = TempDirectory()
        let clock = FakeClock()
        let a = try await Store.temporary(d1) { $0.wallClock = clock.read }
        let b = try await Store.temporary(d2) { $0.wallClock = clock.read }
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        var r = note("n", "T")
        r["body"] = .string("B")
        let v1 = try await a.save(r)
        #expect(try await b.apply(remoteChanges: [v1]).inserted == 1)
        var ea = v1, eb = v1
        ea["title"] = .string("from a")
        eb["body"] = .string("from b")
        let va = try await a.save(ea)
        let vb = try await b.save(eb)
        #expect(try await a.apply(remoteChanges: [vb]).merged == 1)
        #expect(try await b.apply(remoteChanges: [va]).merged == 1)
        let ma = try await a.record(for: r.id), mb = try await b.record(for: r.id)
        #expect(ma == mb)
        #expect(ma["title"] == .string("from a") && ma["body"] == .string("from b"))
        // Same field on both: the larger dot wins on both nodes.
        var xa = ma, xb = mb
        xa["title"] = .string("A wins?")
        xb["title"] = .string("B wins?")
        let wa = try await a.save(xa)
        let wb = try await b.save(xb)
        try await a.apply(remoteChanges: [wb])
        try await b.apply(remoteChanges: [wa])
        let fa = try await a.record(for: r.id)
        #expect(fa == (try await b.record(for: r.id)))
        let winner = max(
            Dot(node: a.nodeID, hlc: wa.versionVector[a.nodeID]), Dot(node: b.nodeID, hlc: wb.versionVector[b.nodeID]))
        #expect(fa["title"] == (winner.node == a.nodeID ? .string("A wins?") : .string("B wins?")))
        // Re-applying anything is a no-op.
        #expect(try await a.apply(remoteChanges: [v1, va, vb, wa, wb]).unchanged == 5)
    }

    /// A merge of concurrent saves is read by a fetch from a vector that covers it (a token of
    /// another store): replication may have to send it whatever the subscriber's knowledge
    /// (Spec/replication.md §3.5.3 rule 6). A save over it makes it an ordinary version again.
    @Test func aMergeIsReadByAVectorThatCoversIt() async throws {
        let d1 = TempDirectory(), d2 = TempDirectory()
        let a = try await Store.temporary(d1)
        let b = try await Store.temporary(d2)
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        let v1 = try await a.save(note("n", "T"))
        try await a.save(note("other", "O"))
        try await b.apply(remoteChanges: [v1])
        var ea = v1, eb = v1
        ea["title"] = .string("from a")
        eb["body"] = .string("from b")
        let va = try await a.save(ea)
        let vb = try await b.save(eb)
        try await a.apply(remoteChanges: [vb])
        try await b.apply(remoteChanges: [va])
        #expect(try await a.record(for: v1.id).heads.count == 2)
        // b's token is foreign to a: a answers from its vector, which covers every version a holds.
        let foreign = try await b.changes(in: notes, since: nil).token
        #expect(try await a.changes(in: notes, since: foreign).records.map(\.id.name) == ["n"])
        try await a.save(try await a.record(for: v1.id))
        let again = try await b.changes(in: notes, since: nil).token
        #expect(try await a.changes(in: notes, since: again).records.map(\.id.name) == ["n"])
        try await b.apply(remoteChanges: [try await a.record(for: v1.id)])
        let covering = try await b.changes(in: notes, since: nil).token
        #expect(try await a.changes(in: notes, since: covering).records.isEmpty)
    }

    @Test func saveConcurrentWithDeleteKeepsTheRecord() async throws {
        let d1 = TempDirectory(), d2 = TempDirectory()
        let a = try await Store.temporary(d1)
        let b = try await Store.temporary(d2)
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        let v1 = try await a.save(note("n", "T"))
        try await b.apply(remoteChanges: [v1])
        try await a.delete(v1.id)
        var e = v1
        e["title"] = .string("edited offline")
        let vb = try await b.save(e)
        let tomb = try #require(try await a.changes(in: notes, since: nil).records.first)
        #expect(tomb.isDeleted)
        try await a.apply(remoteChanges: [vb])
        try await b.apply(remoteChanges: [tomb])
        let ra = try await a.record(for: v1.id)
        #expect(ra == (try await b.record(for: v1.id)))
        #expect(ra["title"] == .string("edited offline"))
    }

    @Test func rejectsUnsavedRecordsAndKeepsItsClockFromFutureOnes() async throws {
        let dir = TempDirectory()
        let store = try await Store.temporary(dir) { $0.wallClock = { 1_795_000_000_000 } }
        try await store.createZone(notes)
        _ = await expectCode(.invalidArguments) { try await store.apply(remoteChanges: [note("n", "unsaved")]) }
        let future = Stamping.saved(
            note("f", "x"), by: .random(), at: HLC(milliseconds: 1_795_000_000_000 + 3_600_000, logical: 0))
        // A version from a clock an hour ahead is applied (refusing it would stall the zone), but
        // its timestamp is not absorbed: this node's later writes keep its own clock.
        let result = try await store.apply(remoteChanges: [future])
        #expect(result.skewed == 1 && result.inserted == 1)
        #expect(await store.lastTimestamp.milliseconds < 1_795_000_000_000 + 60_000)
        let elsewhere = Stamping.saved(
            note("g", "x", zone: RecordZone.ID(name: "nope")), by: .random(),
            at: HLC(milliseconds: 1_795_000_000_000, logical: 0))
        _ = await expectCode(.zoneNotFound) { try await store.apply(remoteChanges: [elsewhere]) }
        #expect(try await store.allRecordIDs(in: notes).map(\.name) == ["f"])
    }

    /// Three nodes edit, delete and sync at random; every version they produce is then applied to
    /// fresh stores in shuffled, duplicated batches, and every store must end byte-identical.
    @Test(arguments: [1 as UInt64, 2, 3, 4])
    func randomHistoriesConvergeWhateverTheOrder(seed: UInt64) async throws {
        var history = try await RandomHistory(seed: seed, steps: 120, names: 12, keepSynced: false)
        let nodes = history.nodes, clock = history.clock, inc = history.incarnation
        var versions = history.versions
        // Collect every version any node holds or held in its feed.
        for n in nodes { versions += try await ChangesTests.drain(n, notes, from: nil, limit: 50).0 }
        // Full sync among the nodes.
        for _ in 0..<2 {
            for i in 0..<3 {
                for j in 0..<3 where i != j {
                    try await nodes[i].apply(
                        remoteChanges: try await ChangesTests.drain(nodes[j], notes, from: nil, limit: 100).0)
                }
            }
        }
        let reference = try await ChangesTests.drain(nodes[0], notes, from: nil, limit: 100).0.sorted { $0.id < $1.id }
        #expect(reference.count >= 8 && versions.count > 40, "seed \(seed): history too small to test anything")
        #expect(
            reference.contains { $0.heads.count > 1 || $0.versionVector.count > 1 },
            "seed \(seed): no concurrent history")
        for n in nodes.dropFirst() {
            let other = try await ChangesTests.drain(n, notes, from: nil, limit: 100).0.sorted { $0.id < $1.id }
            #expect(other == reference, "seed \(seed): nodes diverged")
        }
        // Fresh replicas fed every version in random order, in random batches, with duplicates.
        for round in 0..<2 {
            let d = TempDirectory()
            let fresh = try await Store.temporary(d) { $0.wallClock = clock.read }
            try await fresh.createZone(notes, incarnation: inc)
            var pool = versions + versions.prefix(Int(history.rng.next() % UInt64(versions.count + 1)))
            for k in stride(from: pool.count - 1, to: 0, by: -1) {
                pool.swapAt(k, Int(history.rng.next() % UInt64(k + 1)))
            }
            while !pool.isEmpty {
                let n = min(pool.count, 1 + Int(history.rng.next() % 9))
                try await fresh.apply(remoteChanges: Array(pool.prefix(n)))
                pool.removeFirst(n)
            }
            let got = try await ChangesTests.drain(fresh, notes, from: nil, limit: 100).0.sorted { $0.id < $1.id }
            #expect(got == reference, "seed \(seed), replay \(round): replica differs")
        }
    }
}
