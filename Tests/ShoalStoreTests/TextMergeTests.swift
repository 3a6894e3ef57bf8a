// TextMergeTests: the text-merging resolver on its own, and two stores that edit different
// paragraphs of one note while apart — after several saves each, both hold both edits.

import Testing
import ShoalWire
import Synchronization
@testable import ShoalStore

@Suite struct TextMergeTests {
    static let body = "Shopping list.\n\nApples and pears.\n\nBread and milk.\n"
    static let merge = TextMerge(fields: ["Note.body"])
    static let nodeA = NodeID(high: 0xA, low: 1), nodeB = NodeID(high: 0xB, low: 2)

    /// A note saved by node `node` at `hlc` over `base`, with `fields` (each stamped with the new dot).
    static func version(of base: Record, by node: NodeID, at hlc: UInt64, _ fields: [String: String]) -> Record {
        let dot = Dot(node: node, hlc: HLC(rawValue: hlc))
        var vv = base.versionVector
        vv.advance(node, to: dot.hlc)
        var slots = base.fields.filter { fields[$0.name] == nil }
        slots += fields.map { Record.Field(name: $0.key, value: .string($0.value), stamp: dot) }
        slots.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        return Record(
            recordType: base.recordType, id: base.id, parent: nil, creation: base.creation ?? dot, versionVector: vv,
            heads: [Record.Head(node: node, isDeletion: false)], fields: slots, extensions: [])
    }

    static func conflict(_ ancestor: Record?, _ local: Record, _ remote: Record, merged: Record, fields: [String])
        -> RecordConflict
    {
        RecordConflict(
            origin: .replication, fieldNames: fields, ancestor: ancestor, local: local, remote: remote, merged: merged)
    }

    static let base = version(
        of: Record(recordType: "Note", id: Record.ID(name: "n", zone: notes)), by: nodeA, at: 100,
        ["body": body, "title": "list"])
    static let fromA = version(
        of: base, by: nodeA, at: 200, ["body": body.replacing("pears", with: "plums"), "title": "a"])
    static let fromB = version(
        of: base, by: nodeB, at: 300,
        [
            "body": body.replacing("Bread and milk", with: "Bread, milk and eggs"),
            "title": "b"
        ])

    @Test func bothSidesEditsOfANamedFieldAreKeptOnEveryNode() throws {
        let merged = try Store.merged(Self.fromA, Self.fromB)
        let onA = Self.merge.resolve(
            Self.conflict(Self.base, Self.fromA, Self.fromB, merged: merged, fields: ["body", "title"]))
        let onB = Self.merge.resolve(
            Self.conflict(Self.base, Self.fromB, Self.fromA, merged: merged, fields: ["body", "title"]))
        #expect(onA["body"] == .string("Shopping list.\n\nApples and plums.\n\nBread, milk and eggs.\n"))
        #expect(onA["title"] == .string("b"), "a field not named keeps the merge's value (the later writer's)")
        #expect(onA == onB, "the same record whichever side is this node's")
    }

    @Test func overlappingEditsGoToTheLaterWriter() throws {
        let b2 = Self.version(
            of: Self.base, by: Self.nodeB, at: 300, ["body": Self.body.replacing("pears", with: "quinces")])
        let merged = try Store.merged(Self.fromA, b2)
        for (local, remote) in [(Self.fromA, b2), (b2, Self.fromA)] {
            let r = Self.merge.resolve(Self.conflict(Self.base, local, remote, merged: merged, fields: ["body"]))
            #expect(
                r["body"] == .string("Shopping list.\n\nApples and quinces.\n\nBread and milk.\n"),
                "b's dot is the later")
        }
    }

    @Test func withoutAnAncestorOrAStringTheMergeStands() throws {
        let merged = try Store.merged(Self.fromA, Self.fromB)
        #expect(
            Self.merge.resolve(Self.conflict(nil, Self.fromA, Self.fromB, merged: merged, fields: ["body"])) == merged)
        var notText = Self.base
        notText["body"] = .int64(3)
        #expect(
            Self.merge.resolve(Self.conflict(notText, Self.fromA, Self.fromB, merged: merged, fields: ["body"]))
                == merged)
        let otherType = TextMerge(fields: ["Task.body", "Note.title", "body", "Note.body.x"])
        #expect(
            otherType.resolve(Self.conflict(Self.base, Self.fromA, Self.fromB, merged: merged, fields: ["body"]))
                == merged)
        #expect(
            TextMerge.isFieldName("Note.body") && !TextMerge.isFieldName("body")
                && !TextMerge.isFieldName("Note.body.x")
                && !TextMerge.isFieldName("Note.") && !TextMerge.isFieldName("1Note.body"))
    }

    /// Two stores with the text resolver, one note; apart, `a` saves three times (its first
    /// paragraph) and `b` twice (its last); `a` last when `bDecides` (the writer of the older
    /// head decides). Exchanging versions until nothing changes leaves both with both edits.
    @Test(arguments: [false, true])
    func twoReplicasEditingDifferentParagraphsWhileApartBothKeepBoth(bDecides: Bool) async throws {
        let clock = FakeClock()
        let d1 = TempDirectory(), d2 = TempDirectory()
        let a = try await Store.temporary(d1) { $0.wallClock = clock.read }
        let b = try await Store.temporary(d2) { $0.wallClock = clock.read }
        let inc = try await a.createZone(notes).incarnation
        try await b.createZone(notes, incarnation: inc)
        for s in [a, b] { await s.setConflictResolver(Self.merge.resolve, for: notes) }
        var r = note("n", "list")
        r["body"] = .string(Self.body)
        let v0 = try await a.save(r)
        try await b.apply(remoteChanges: [v0])
        let eventsA = await a.conflictEvents(), eventsB = await b.conflictEvents()

        func edit(_ s: Store, _ from: String, _ to: String) async throws {
            var cur = try await s.record(for: v0.id)
            guard case .string(let text)? = cur["body"] else { Issue.record("no body"); return }
            cur["body"] = .string(text.replacing(from, with: to))
            try await s.save(cur)
        }
        let aEdits = [
            ("Shopping list.", "Shopping list for Saturday."), ("Saturday.", "Saturday, early."),
            ("early.", "early, at nine.")
        ]
        let bEdits = [("Bread and milk.", "Bread, milk and eggs."), ("milk and eggs.", "milk, eggs and butter.")]
        if bDecides {
            for (f, t) in bEdits { try await edit(b, f, t) }
            for (f, t) in aEdits { try await edit(a, f, t) }
        } else {
            for (f, t) in aEdits { try await edit(a, f, t) }
            for (f, t) in bEdits { try await edit(b, f, t) }
        }
        try await Self.exchangeUntilQuiet([a, b])
        let expected =
            "Shopping list for Saturday, early, at nine.\n\nApples and pears.\n\nBread, milk, eggs and butter.\n"
        let onA = try await a.record(for: v0.id), onB = try await b.record(for: v0.id)
        #expect(onA["body"] == .string(expected))
        #expect(onA == onB, "the two stores hold different versions")

        // The decider was shown the version both started from, though each saved since: `b`
        // meets a's version first; when `a` decides, it meets the conflict in b's merge.
        let decided = await ConflictResolverTests.first(bDecides ? eventsB : eventsA)
        #expect(decided?.conflict.ancestor?["body"] == .string(Self.body))
        guard case .resolved? = decided?.outcome else {
            Issue.record("\(String(describing: decided?.outcome))"); return
        }
        if !bDecides {
            guard case .decidedBy(let node)? = await ConflictResolverTests.first(eventsB)?.outcome else {
                Issue.record("b did not report the conflict as a's to decide"); return
            }
            #expect(node == a.nodeID)
        }
    }

    /// The ancestor of a replicated conflict after two local saves: without a resolver only the
    /// previous version is kept, which the peer never saw; with one, the base is the version
    /// received — or, once a peer acknowledged a later version, that one.
    @Test func theAncestorSurvivesLocalSavesInAZoneWithAResolver() async throws {
        for mode in ["no resolver", "resolver", "acknowledged"] {
            let clock = FakeClock()
            let d1 = TempDirectory(), d2 = TempDirectory()
            let a = try await Store.temporary(d1) { $0.wallClock = clock.read }
            let b = try await Store.temporary(d2) { $0.wallClock = clock.read }
            let inc = try await a.createZone(notes).incarnation
            try await b.createZone(notes, incarnation: inc)
            if mode != "no resolver" { await a.setConflictResolver({ $0.merged }, for: notes) }
            var r = note("n", "v0")
            let v0 = try await a.save(r)
            try await b.apply(remoteChanges: [v0])
            r = v0
            r["title"] = .string("v1")
            let v1 = try await a.save(r)
            try await b.apply(remoteChanges: [v1])
            if mode == "acknowledged" { try await a.acknowledge(peer: b.nodeID, zone: notes, vector: v1.versionVector) }
            for t in ["v2", "v3"] {
                r = try await a.record(for: v0.id)
                r["title"] = .string(t)
                try await a.save(r)
            }
            var onB = v1
            onB["title"] = .string("from b")
            let vb = try await b.save(onB)
            let events = await a.conflictEvents()
            try await a.apply(remoteChanges: [vb])
            let e = await ConflictResolverTests.first(events)
            let want: Record? = mode == "no resolver" ? nil : mode == "resolver" ? v0 : v1
            #expect(e?.conflict.ancestor == want, "\(mode): \(String(describing: e?.conflict.ancestor))")
        }
    }

    /// Applies every store's changes to every other until a whole round changes nothing
    /// (bounded: 8 rounds).
    static func exchangeUntilQuiet(_ stores: [Store]) async throws {
        for _ in 0..<8 {
            let before = try await ConflictResolverTests.snapshot(stores)
            for x in stores {
                for y in stores where x !== y {
                    let page = try await x.changes(in: notes, since: nil, limit: 1_000)
                    if !page.records.isEmpty { try await y.apply(remoteChanges: page.records) }
                }
            }
            if try await ConflictResolverTests.snapshot(stores) == before { return }
        }
        Issue.record("the stores kept writing new versions")
    }
}
