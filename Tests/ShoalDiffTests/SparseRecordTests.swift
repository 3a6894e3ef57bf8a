// SparseRecordTests: a version sent sparse and rebuilt on the receiver merges exactly like the whole version.

import Testing
import ShoalDiff
import ShoalSamples
@testable import ShoalWire

@Suite struct SparseRecordTests {
    static let cases = 10_000

    /// For seeded histories — a saved base both sides hold, then edits on the sender and on the
    /// receiver (concurrent, none, or after already merging the sender's) — the rebuilt version
    /// is valid and `merge(local, rebuilt)` has the bytes of `merge(local, whole)`.
    @Test func rebuiltVersionsMergeLikeWholeOnes() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0x5BA2_0001)
        var editor = RecordEditor(seed: seed)
        var sparseCount = 0
        for i in 0..<Self.cases {
            let (base, a, b) = MergeTests.concurrentEdits(&editor, disjoint: editor.chance(30))
            var sender = a
            if editor.chance(30) { sender = editor.edited(sender, stamp: editor.freshDot(after: sender, node: MergeTests.nodeA)) }
            let local: Record
            switch editor.int(3) {
            case 0: local = b
            case 1: local = base
            default: local = editor.edited(try merge(b, a), stamp: editor.freshDot(after: try merge(b, a), node: MergeTests.nodeB))
            }
            let knowledge = base.versionVector
            guard let sparse = SparseRecord(sender, base: knowledge) else {
                #expect(!(sender.creation.map(knowledge.covers) ?? false) || sender.isDeleted, "seed \(seed) case \(i): a saved version did not go sparse")
                continue
            }
            sparseCount += 1
            let rebuilt = try #require(Record(expanding: sparse, base: knowledge, onto: local), "seed \(seed) case \(i)")
            do {
                try rebuilt.validate()
            } catch {
                Issue.record("seed \(seed) case \(i): rebuilt version is not valid: \(error)\nsender: \(sender)\nlocal: \(local)\nrebuilt: \(rebuilt)")
                return
            }
            let expected = try merge(local, sender), got = try merge(local, rebuilt)
            guard expected.encoded() == got.encoded() else {
                Issue.record("seed \(seed) case \(i): rebuilt merge differs\nsender: \(sender)\nlocal: \(local)\nsparse: \(sparse)\nexpected: \(expected)\ngot: \(got)")
                return
            }
            // The store replaces a dominated version instead of merging: the rebuilt one must
            // dominate exactly when the whole one does, and then be the whole one.
            let wholeOrder = sender.versionVector.compare(local.versionVector)
            #expect(rebuilt.versionVector.compare(local.versionVector) == wholeOrder, "seed \(seed) case \(i): vector order differs")
            if wholeOrder == .after { #expect(rebuilt.encoded() == sender.encoded(), "seed \(seed) case \(i): dominating rebuild differs") }
            let m = ChangesMessage(zone: sender.id.zone, incarnation: NodeID(high: 1, low: 1), batch: 1, isCaughtUp: false,
                                   token: ChangeToken(bytes: [1]), records: [], sparseRecords: [sparse], base: knowledge)
            let back = try ChangesMessage(decoding: m.encoded())
            #expect(back.sparseRecords == [sparse] && back.base == knowledge, "seed \(seed) case \(i): sparse round trip")
        }
        #expect(sparseCount > Self.cases / 2, "seed \(seed): only \(sparseCount) of \(Self.cases) versions went sparse")
    }

    /// A version whose creation the base does not cover, a deletion, or a save merged with a
    /// concurrent delete (a deletion head), travels whole.
    @Test func deletionsAndUnseenCreationsTravelWhole() throws {
        var editor = RecordEditor(seed: 0x5BA2_0002)
        let (base, a, _) = MergeTests.concurrentEdits(&editor, disjoint: false)
        #expect(SparseRecord(a, base: VersionVector()) == nil)
        var deleted = a
        deleted.heads = [Record.Head(node: MergeTests.nodeA, isDeletion: true)]
        #expect(SparseRecord(deleted, base: base.versionVector) == nil)
        #expect(SparseRecord(a, base: base.versionVector) != nil)
        // A save merged with a concurrent delete: live, but with a deletion head.
        var merged = a
        merged.heads = [Record.Head(node: MergeTests.nodeA, isDeletion: true), Record.Head(node: MergeTests.nodeB, isDeletion: false)]
        merged.versionVector.advance(MergeTests.nodeB, to: HLC(rawValue: a.versionVector[MergeTests.nodeA].rawValue))
        #expect(!merged.isDeleted)
        #expect(SparseRecord(merged, base: base.versionVector) == nil)
    }

    /// A receiver whose knowledge covers a write of the record only through a purge horizon
    /// holds a version that does not descend from it (here another lineage of the same name):
    /// that version is no base, and rebuilding refuses it (Spec/replication.md §3.5.1), so the
    /// receiver asks for whole versions instead of taking its own creation and entries for the
    /// sender's.
    @Test func aVersionOfAnotherLineageIsNoBase() throws {
        let a = MergeTests.nodeA, b = MergeTests.nodeB
        let id = Record.ID(name: "r", zone: MergeTests.zone)
        // The receiver's version: B's lineage alone.
        let local = Record(recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(b, 100),
                           versionVector: VersionVector([(b, HLC(rawValue: 100))]), heads: [Record.Head(node: b, isDeletion: false)],
                           fields: [Record.Field(name: "x", value: .int64(1), stamp: MergeTests.dot(b, 100))], extensions: [])
        // The sender's: A's lineage (created later, edited) merged with B's.
        let sender = Record(recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(a, 200),
                            versionVector: VersionVector([(a, HLC(rawValue: 250)), (b, HLC(rawValue: 100))]),
                            heads: [Record.Head(node: a, isDeletion: false), Record.Head(node: b, isDeletion: false)],
                            fields: [Record.Field(name: "x", value: .int64(1), stamp: MergeTests.dot(b, 100)),
                                     Record.Field(name: "y", value: .int64(2), stamp: MergeTests.dot(a, 250))], extensions: [])
        // Both sides reflect A's writes up to 300: the receiver through a purge horizon only.
        let base = VersionVector([(a, HLC(rawValue: 300)), (b, HLC(rawValue: 100))])
        let sparse = try #require(SparseRecord(sender, base: base))
        #expect(Record(expanding: sparse, base: base, onto: local) == nil)
        // The same sparse record rebuilds on a version of the sender's lineage.
        var ofLineage = sender
        ofLineage.fields = [Record.Field(name: "x", value: .int64(1), stamp: MergeTests.dot(b, 100))]
        let rebuilt = try #require(Record(expanding: sparse, base: base, onto: ofLineage))
        #expect(rebuilt.creation == sender.creation)
        #expect(rebuilt.versionVector == sender.versionVector)
    }

    /// An entry at or below the base that is no head travels too: a receiver holding another
    /// lineage is refused by it (before, only heads' entries travelled, and this rebuilt).
    @Test func anEntryBelowTheBaseShowsAnotherLineage() throws {
        let a = MergeTests.nodeA, b = MergeTests.nodeB, c = NodeID(high: 0xC, low: 3)
        let id = Record.ID(name: "r", zone: MergeTests.zone)
        let local = Record(recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(b, 100),
                           versionVector: VersionVector([(b, HLC(rawValue: 100))]), heads: [Record.Head(node: b, isDeletion: false)],
                           fields: [Record.Field(name: "x", value: .int64(1), stamp: MergeTests.dot(b, 100))], extensions: [])
        // Created by C, then edited by A: C's entry is no head.
        let sender = Record(recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(c, 50),
                            versionVector: VersionVector([(a, HLC(rawValue: 250)), (c, HLC(rawValue: 50))]),
                            heads: [Record.Head(node: a, isDeletion: false)],
                            fields: [Record.Field(name: "y", value: .int64(2), stamp: MergeTests.dot(a, 250)),
                                     Record.Field(name: "z", value: .int64(3), stamp: MergeTests.dot(c, 50))], extensions: [])
        let base = VersionVector([(a, HLC(rawValue: 200)), (b, HLC(rawValue: 100)), (c, HLC(rawValue: 100))])
        let sparse = try #require(SparseRecord(sender, base: base))
        #expect(sparse.entries == sender.versionVector)
        #expect(Record(expanding: sparse, base: base, onto: local) == nil)
    }

    /// A save merged onto an older version of its lineage, whose entry lies above the base while
    /// an omitted slot and the creation lie below it: the floor shows that a receiver holding
    /// another lineage of the name never held that slot (the shape of a purge-simulation seed).
    @Test func aFloorShowsAnOmittedSlotAnotherLineageLacks() throws {
        let a = MergeTests.nodeA, b = MergeTests.nodeB
        let id = Record.ID(name: "r", zone: MergeTests.zone)
        let sender = Record(recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(a, 100),
                            versionVector: VersionVector([(a, HLC(rawValue: 300))]), heads: [Record.Head(node: a, isDeletion: false)],
                            fields: [Record.Field(name: "alpha", value: .int64(1), stamp: MergeTests.dot(a, 100)),
                                     Record.Field(name: "beta", value: .int64(2), stamp: MergeTests.dot(a, 300))], extensions: [])
        let base = VersionVector([(a, HLC(rawValue: 200)), (b, HLC(rawValue: 50))])
        let sparse = try #require(SparseRecord(sender, base: base))
        #expect(sparse.floors == VersionVector([(a, HLC(rawValue: 100))]))
        #expect(sparse.fields.map(\.name) == ["beta"])
        // Another lineage of the name, which reflects A's writes up to 200 only through a purge.
        let other = Record(recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(b, 50),
                           versionVector: VersionVector([(b, HLC(rawValue: 50))]), heads: [Record.Head(node: b, isDeletion: false)],
                           fields: [Record.Field(name: "gamma", value: .int64(3), stamp: MergeTests.dot(b, 50))], extensions: [])
        #expect(Record(expanding: sparse, base: base, onto: other) == nil)
        // The sender's earlier version rebuilds to the sender's exactly.
        let earlier = Record(recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(a, 100),
                             versionVector: VersionVector([(a, HLC(rawValue: 100))]), heads: [Record.Head(node: a, isDeletion: false)],
                             fields: [Record.Field(name: "alpha", value: .int64(1), stamp: MergeTests.dot(a, 100))], extensions: [])
        #expect(Record(expanding: sparse, base: base, onto: earlier) == sender)
    }
}
