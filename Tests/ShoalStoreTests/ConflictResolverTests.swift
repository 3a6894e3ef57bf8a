// ConflictResolverTests: conflicts found where versions meet, decided on one node, seen by every
// node's listeners; random histories with different resolvers per node still converge.

import Testing
import ShoalStore
import ShoalWire
import ShoalSamples
import Synchronization

@Suite struct ConflictResolverTests {
    /// Two stores holding one record, then a concurrent edit of its title on each, `a`'s first.
    static func conflictingPair(_ d1: TempDirectory, _ d2: TempDirectory, clock: FakeClock)
        async throws -> (a: Store, b: Store, base: Record, va: Record, vb: Record)
    {
        let a = try await Store.temporary(d1) { $0.wallClock = clock.read }
        let b = try await Store.temporary(d2) { $0.wallClock = clock.read }
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        var r = note("n", "draft")
        r["body"] = .string("text")
        let base = try await a.save(r)
        try await b.apply(remoteChanges: [base])
        var ea = base, eb = base
        ea["title"] = .string("from a")
        eb["title"] = .string("from b")
        eb["body"] = .string("text, edited on b")
        let va = try await a.save(ea)
        let vb = try await b.save(eb)
        return (a, b, base, va, vb)
    }

    /// The first event of `events`, waiting at most 10 s.
    static func first(_ events: AsyncStream<ConflictEvent>) async -> ConflictEvent? {
        await withTaskGroup(of: ConflictEvent?.self) { g in
            g.addTask {
                for await e in events { return e }; return nil
            }
            g.addTask {
                try? await Task.sleep(for: .seconds(10)); return nil
            }
            let e = await g.next() ?? nil
            g.cancelAll()
            return e
        }
    }

    @Test func theOlderWritersResolverDecidesAndBothNodesHoldItsResult() async throws {
        let d1 = TempDirectory(), d2 = TempDirectory()
        let (a, b, base, va, vb) = try await Self.conflictingPair(d1, d2, clock: FakeClock())
        // Different resolvers on the two nodes: only a's runs, because a wrote the older side.
        let calls = Mutex(0)
        await a.setConflictResolver(
            { c in
                calls.withLock { $0 += 1 }
                var r = c.merged
                let titles = [c.local["title"], c.remote["title"]].compactMap { v -> String? in
                    if case .string(let s)? = v { return s } else { return nil }
                }
                r["title"] = .string(titles.sorted().joined(separator: " + "))
                return r
            }, for: notes)
        await b.setConflictResolver(
            { _ in
                Issue.record("b's resolver must not run: a decides")
                var r = Record(recordType: "Note", id: Record.ID(name: "n", zone: notes))
                r["title"] = .string("b's idea")
                return r
            }, for: notes)
        let eventsA = await a.conflictEvents(), eventsB = await b.conflictEvents()

        try await b.apply(remoteChanges: [va])
        let atB = await Self.first(eventsB)
        #expect(atB?.conflict.fieldNames == ["title"])
        guard case .decidedBy(let node)? = atB?.outcome else {
            Issue.record("b: \(String(describing: atB?.outcome))"); return
        }
        #expect(node == a.nodeID)
        #expect(try await b.record(for: base.id)["title"] == .string("from b"), "the merge stands on b meanwhile")

        try await a.apply(remoteChanges: [vb])
        let atA = await Self.first(eventsA)
        #expect(calls.withLock { $0 } == 1)
        #expect(atA?.conflict.origin == .replication)
        #expect(atA?.conflict.ancestor?["title"] == .string("draft"), "the version both sides edited")
        #expect(atA?.conflict.local["title"] == .string("from a") && atA?.conflict.remote["title"] == .string("from b"))
        guard case .resolved(let resolved)? = atA?.outcome else {
            Issue.record("a: \(String(describing: atA?.outcome))"); return
        }
        #expect(resolved["title"] == .string("from a + from b"))
        #expect(resolved["body"] == .string("text, edited on b"), "fields without conflict keep the merge")
        #expect(
            resolved.versionVector.compare(va.versionVector) == .after
                && resolved.versionVector.compare(vb.versionVector) == .after)

        // The resolution is an ordinary version: b takes it whole, and both hold the same record.
        let held = try await a.record(for: base.id)
        #expect(held == resolved)
        #expect(try await b.apply(remoteChanges: [held]).replaced == 1)
        #expect(try await b.record(for: base.id) == held)
        #expect(try await a.apply(remoteChanges: [va, vb, held]).unchanged == 3, "nothing more to decide")
        #expect(calls.withLock { $0 } == 1)
    }

    /// The deciding node may first meet the conflict already merged, by the other writer or by a
    /// third node: the merge still carries its write as a head, so it still decides.
    @Test(arguments: [false, true])
    func aConflictThatArrivesAlreadyMergedIsStillDecided(byThirdNode: Bool) async throws {
        let d1 = TempDirectory(), d2 = TempDirectory(), d3 = TempDirectory()
        let clock = FakeClock()
        let (a, b, base, va, vb) = try await Self.conflictingPair(d1, d2, clock: clock)
        let merger: Store
        if byThirdNode {
            merger = try await Store.temporary(d3) { $0.wallClock = clock.read }
            try await merger.createZone(notes, incarnation: await a.zones()[0].incarnation)
            try await merger.apply(remoteChanges: [base, vb])
        } else {
            merger = b
        }
        try await merger.apply(remoteChanges: [va])
        let merged = try await merger.record(for: base.id)
        #expect(merged.heads.count == 2 && merged["title"] == .string("from b"))

        await a.setConflictResolver(
            { c in
                var r = c.merged
                r["title"] = .string("decided on a")
                return r
            }, for: notes)
        let events = await a.conflictEvents()
        try await a.apply(remoteChanges: [merged])
        let e = await Self.first(events)
        #expect(e?.conflict.fieldNames == ["title"] && e?.conflict.local["title"] == .string("from a"))
        guard case .resolved(let resolved)? = e?.outcome else {
            Issue.record("\(String(describing: e?.outcome))"); return
        }
        #expect(resolved["title"] == .string("decided on a") && resolved["body"] == .string("text, edited on b"))
        #expect(resolved.heads.count == 1 && resolved.versionVector.compare(merged.versionVector) == .after)
        #expect(try await a.record(for: base.id) == resolved)
    }

    @Test func withoutAResolverTheMergeStandsAndIsReported() async throws {
        let d1 = TempDirectory(), d2 = TempDirectory()
        let (a, _, base, _, vb) = try await Self.conflictingPair(d1, d2, clock: FakeClock())
        let events = await a.conflictEvents()
        try await a.apply(remoteChanges: [vb])
        let e = await Self.first(events)
        guard case .merged? = e?.outcome else { Issue.record("\(String(describing: e?.outcome))"); return }
        #expect(e?.conflict.merged == (try await a.record(for: base.id)))
        #expect(try await a.record(for: base.id)["title"] == .string("from b"), "last writer wins")
    }

    @Test func aResolverRecordWithAnotherIDIsRefusedAndTheBatchStillApplies() async throws {
        let d1 = TempDirectory(), d2 = TempDirectory()
        let (a, _, base, _, vb) = try await Self.conflictingPair(d1, d2, clock: FakeClock())
        await a.setConflictResolver({ _ in note("other", "x") }, for: notes)
        let events = await a.conflictEvents()
        #expect(try await a.apply(remoteChanges: [vb]).merged == 1)
        let e = await Self.first(events)
        guard case .rejected(let reason)? = e?.outcome else {
            Issue.record("\(String(describing: e?.outcome))"); return
        }
        #expect(reason.contains("returned record notes/other") && reason.contains("conflict's ID"), "\(reason)")
        #expect(try await a.record(for: base.id)["title"] == .string("from b"))
    }

    @Test func editsOfDifferentFieldsAreNoConflict() async throws {
        let d1 = TempDirectory(), d2 = TempDirectory()
        let clock = FakeClock()
        let a = try await Store.temporary(d1) { $0.wallClock = clock.read }
        let b = try await Store.temporary(d2) { $0.wallClock = clock.read }
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        let base = try await a.save(note("n", "draft"))
        try await b.apply(remoteChanges: [base])
        var ea = base, eb = base
        ea["title"] = .string("new title")
        eb["body"] = .string("new body")
        try await a.save(ea)
        let vb = try await b.save(eb)
        await a.setConflictResolver(
            { _ in
                Issue.record("no conflict to decide"); return base
            }, for: notes)
        let events = await a.conflictEvents()
        #expect(try await a.apply(remoteChanges: [vb]).merged == 1)
        let e = await withTaskGroup(of: ConflictEvent?.self) { g in
            g.addTask {
                for await e in events { return e }; return nil
            }
            g.addTask {
                try? await Task.sleep(for: .milliseconds(300)); return nil
            }
            let e = await g.next() ?? nil
            g.cancelAll()
            return e
        }
        #expect(e == nil)
        let merged = try await a.record(for: base.id)
        #expect(merged["title"] == .string("new title") && merged["body"] == .string("new body"))
    }

    @Test func aStaleSaveIsDecidedByTheResolverInsteadOfFailing() async throws {
        let d = TempDirectory()
        let store = try await Store.temporary(d)
        try await store.createZone(notes)
        var r = note("n", "draft")
        r["body"] = .string("one")
        let v1 = try await store.save(r)
        var other = v1
        other["title"] = .string("theirs")
        try await store.save(other)  // the record moves on; v1's change tag is now stale

        // Without a resolver: serverRecordChanged.
        var mine = v1
        mine["title"] = .string("mine")
        await expectCode(.serverRecordChanged) { _ = try await store.save(mine) }

        // The app's fields win the conflicting ones; the resolver notes what it was shown.
        let shown = Mutex([(fields: [String], ancestor: String?)]())
        await store.setConflictResolver(
            { c in
                var ancestorTitle: String? = nil
                if case .string(let t)? = c.ancestor?["title"] { ancestorTitle = t }
                shown.withLock { $0.append((c.fieldNames, ancestorTitle)) }
                var out = c.remote
                for f in c.fieldNames { out[f] = c.local[f] }
                return out
            }, for: notes)
        let events = await store.conflictEvents()

        // A field only the app changed since the version it read saves without asking: the
        // store still holds that version (the stored record's previous one), so it knows.
        var bodyOnly = v1
        bodyOnly["body"] = .string("two")
        let s1 = try await store.save(bodyOnly)
        #expect(s1["body"] == .string("two") && s1["title"] == .string("theirs"))
        #expect(shown.withLock { $0.isEmpty })

        // The same field changed on both sides: the resolver decides.
        var both = s1
        both["title"] = .string("again theirs")
        try await store.save(both)
        var stale = s1
        stale["title"] = .string("mine")
        let s2 = try await store.save(stale)
        #expect(s2["title"] == .string("mine") && s2["body"] == .string("two"), "\(s2)")
        #expect(shown.withLock { $0.map(\.fields) } == [["title"]])
        #expect(shown.withLock { $0.map(\.ancestor) } == ["theirs"], "the version the app read")
        let e = await Self.first(events)
        #expect(e?.conflict.origin == .localSave && e?.conflict.fieldNames == ["title"])
        guard case .resolved(let saved)? = e?.outcome else { Issue.record("\(String(describing: e?.outcome))"); return }
        #expect(saved == s2)

        // When the store no longer holds the version the app read, every changed field that
        // differs is the resolver's to decide, without an ancestor.
        var old = v1
        old["body"] = .string("three")
        let s3 = try await store.save(old)
        #expect(s3["body"] == .string("three") && s3["title"] == .string("mine"))
        #expect(shown.withLock { $0.last?.fields } == ["body"] && shown.withLock { $0.last?.ancestor } == nil)
    }

    /// Three stores, two with different resolvers and one without, edit the same fields at
    /// random and exchange versions in random order: once the exchanges stop, every store holds
    /// the same records, and exchanging again writes nothing (no resolver ping-pong).
    @Test(arguments: 0..<12)
    func randomHistoriesWithDifferentResolversConverge(seed: UInt64) async throws {
        var rng = SplitMix64(seed: 0xC0_F1_1C7 &+ seed)
        let clock = FakeClock()
        let dirs = (0..<3).map { _ in TempDirectory() }
        var stores = [Store]()
        for d in dirs { stores.append(try await Store.temporary(d) { $0.wallClock = clock.read }) }
        let inc = try await stores[0].createZone(notes).incarnation
        for s in stores.dropFirst() { try await s.createZone(notes, incarnation: inc) }
        let decided = Mutex(0)
        await stores[0].setConflictResolver(
            { c in
                decided.withLock { $0 += 1 }
                var r = c.merged
                for f in c.fieldNames {
                    let both = [c.local[f], c.remote[f]].compactMap { $0.map { "\($0)" } }.sorted()
                    r[f] = .string(both.joined(separator: "|").suffix(40).description)
                }
                return r
            }, for: notes)
        await stores[1].setConflictResolver(
            { c in
                decided.withLock { $0 += 1 }
                return c.remote
            }, for: notes)
        let names = ["r0", "r1", "r2"], fieldNames = ["title", "body", "count"]

        func exchange(_ from: Store, _ to: Store) async throws {
            let page = try await from.changes(in: notes, since: nil, limit: 1_000)
            if !page.records.isEmpty { try await to.apply(remoteChanges: page.records) }
        }
        for step in 0..<120 {
            let s = stores[Int(rng.next() % 3)]
            if rng.next() % 3 == 0 {
                let t = stores[Int(rng.next() % 3)]
                if s !== t { try await exchange(s, t) }
                continue
            }
            let id = Record.ID(name: names[Int(rng.next() % 3)], zone: notes)
            var r = (try? await s.record(for: id)) ?? Record(recordType: "Note", id: id)
            r[fieldNames[Int(rng.next() % 3)]] = .string("s\(step)")
            _ = try await s.save(r, policy: .changedKeys)
        }
        // Exchange everything until a whole round changes nothing.
        var quiet = false
        for _ in 0..<12 where !quiet {
            let before = try await Self.snapshot(stores)
            for x in stores { for y in stores where x !== y { try await exchange(x, y) } }
            quiet = try await Self.snapshot(stores) == before
        }
        #expect(quiet, "seed \(seed): the stores kept writing new versions")
        let finals = try await Self.snapshot(stores)
        #expect(finals[0] == finals[1] && finals[1] == finals[2], "seed \(seed): the stores differ")
        #expect(decided.withLock { $0 } > 0, "seed \(seed): no conflict was decided; the history tests nothing")
        print("conflict-history seed=\(seed) decided=\(decided.withLock { $0 }) records=\(finals[0].count)")
    }

    static func snapshot(_ stores: [Store]) async throws -> [[Record]] {
        var out = [[Record]]()
        for s in stores {
            out.append(try await s.changes(in: notes, since: nil, limit: 1_000).records.sorted { $0.id < $1.id })
        }
        return out
    }
}
