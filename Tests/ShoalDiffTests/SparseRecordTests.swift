// SparseRecordTests: a version sent sparse and rebuilt on the receiver merges exactly like the whole version.

import Testing
import ShoalDiff
import ShoalSamples
@testable import ShoalWire

@Suite struct SparseRecordTests {
    static let cases = 10_000

    /// For seeded histories — a saved base both sides hold, then edits on the sender and on the
    /// receiver (concurrent, none, or after already merging the sender's) — a version either
    /// rebuilds to the sender's exactly, or is refused because the receiver's copy differs in
    /// what was left out (its own write to an omitted field, which the sender has not seen).
    /// Never refused when the receiver holds the base.
    @Test func rebuiltVersionsAreTheSendersOrRefused() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0x5BA2_0001)
        var editor = RecordEditor(seed: seed)
        var sparseCount = 0, refused = 0
        for i in 0..<Self.cases {
            let (base, a, b) = MergeTests.concurrentEdits(&editor, disjoint: editor.chance(30))
            var sender = a
            if editor.chance(30) {
                sender = editor.edited(sender, stamp: editor.freshDot(after: sender, node: MergeTests.nodeA))
            }
            let local: Record
            let kind = editor.int(3)
            switch kind {
            case 0: local = b
            case 1: local = base
            default:
                local = editor.edited(
                    try merge(b, a), stamp: editor.freshDot(after: try merge(b, a), node: MergeTests.nodeB))
            }
            let knowledge = base.versionVector
            guard let sparse = SparseRecord(sender, base: knowledge) else {
                #expect(
                    !(sender.creation.map(knowledge.covers) ?? false) || sender.isDeleted,
                    "seed \(seed) case \(i): a saved version did not go sparse")
                continue
            }
            sparseCount += 1
            let m = ChangesMessage(
                zone: sender.id.zone, incarnation: NodeID(high: 1, low: 1), batch: 1, isCaughtUp: false,
                token: ChangeToken(bytes: [1]), records: [], sparseRecords: [sparse], base: knowledge)
            let back = try ChangesMessage(decoding: m.encoded())
            #expect(
                back.sparseRecords == [sparse] && back.base == knowledge, "seed \(seed) case \(i): sparse round trip")
            guard let rebuilt = Record(expanding: sparse, base: knowledge, onto: local) else {
                // The receiver's own edits (kinds 0 and 2) may have replaced omitted slots.
                #expect(
                    kind != 1,
                    "seed \(seed) case \(i): refused a copy that holds what was left out\nsender: \(sender)\nlocal: \(local)"
                )
                refused += 1
                continue
            }
            guard rebuilt.encoded() == sender.encoded() else {
                Issue.record(
                    "seed \(seed) case \(i): rebuilt version differs\nsender: \(sender)\nlocal: \(local)\nsparse: \(sparse)\nrebuilt: \(rebuilt)"
                )
                return
            }
        }
        #expect(sparseCount > Self.cases / 2, "seed \(seed): only \(sparseCount) of \(Self.cases) versions went sparse")
        #expect(
            sparseCount - refused > sparseCount / 4,
            "seed \(seed): \(refused) of \(sparseCount) sparse versions refused")
    }

    /// The same histories, the base holding long texts and bytes: the sender's version goes
    /// sparse with its changed fields as edits of its previous version (delta slots) where that
    /// is smaller, and the receiver rebuilds it on its copy (or the one before) byte for byte,
    /// or refuses it; never refused when the receiver holds the base.
    @Test func deltaSlotsRebuildTheSendersVersionOrAreRefused() throws {
        let seed = SplitMix64.seed(fromEnvironment: "SHOAL_SEED", default: 0x5BA2_0002)
        var editor = RecordEditor(seed: seed)
        var withDeltas = 0, refused = 0, deltaCount = 0
        for i in 0..<Self.cases {
            var (base, a, b) = MergeTests.concurrentEdits(&editor, disjoint: editor.chance(30))
            if editor.chance(70) {
                // Long values in the base, then edits of them on one or both sides.
                let d = editor.freshDot(after: base)
                base = Stamping.saved(editor.withLongValue(base), by: d.node, at: d.hlc)
                a = editor.edited(base, stamp: editor.freshDot(after: base, node: MergeTests.nodeA))
                b = editor.edited(base, stamp: editor.freshDot(after: base, node: MergeTests.nodeB))
            }
            var sender = a, senderPrevious = base
            if editor.chance(30) {
                senderPrevious = sender
                sender = editor.edited(sender, stamp: editor.freshDot(after: sender, node: MergeTests.nodeA))
            }
            let local: Record, localPrevious: Record?
            let kind = editor.int(3)
            switch kind {
            case 0: (local, localPrevious) = (b, base)
            case 1: (local, localPrevious) = (base, nil)
            default:
                let merged = try merge(b, a)
                (local, localPrevious) = (
                    editor.edited(merged, stamp: editor.freshDot(after: merged, node: MergeTests.nodeB)), merged
                )
            }
            let knowledge = base.versionVector
            guard var sparse = SparseRecord(sender, base: knowledge) else { continue }
            let made = sparse.encodeEdits(against: senderPrevious, base: knowledge)
            guard made > 0 else { continue }
            withDeltas += 1
            deltaCount += made
            let m = ChangesMessage(
                zone: sender.id.zone, incarnation: NodeID(high: 1, low: 1), batch: 1, isCaughtUp: false,
                token: ChangeToken(bytes: [1]), records: [], sparseRecords: [sparse], base: knowledge)
            let back = try ChangesMessage(decoding: m.encoded())
            #expect(back.sparseRecords == [sparse], "seed \(seed) case \(i): delta slots round trip")
            let bases = [local, localPrevious].compactMap { $0 }
            let rebuilt =
                Record(expanding: sparse, base: knowledge, onto: local, bases: bases)
                ?? localPrevious.flatMap {
                    Record(expanding: sparse, base: knowledge, onto: $0, bases: bases.reversed())
                }
            guard let rebuilt else {
                #expect(
                    kind != 1,
                    "seed \(seed) case \(i): refused a copy that holds the base\nsender: \(sender)\nlocal: \(local)")
                refused += 1
                continue
            }
            guard rebuilt.encoded() == sender.encoded() else {
                Issue.record(
                    "seed \(seed) case \(i): rebuilt version differs\nsender: \(sender)\nlocal: \(local)\nsparse: \(sparse)\nrebuilt: \(rebuilt)"
                )
                return
            }
        }
        #expect(
            withDeltas > Self.cases / 20, "seed \(seed): only \(withDeltas) of \(Self.cases) versions had delta slots")
        #expect(refused < withDeltas / 2, "seed \(seed): \(refused) of \(withDeltas) refused")
        print("delta slots: \(withDeltas) versions with \(deltaCount) delta slots, \(refused) refused (seed \(seed))")
    }

    /// The worked example of Spec/replication.md §3.5.1: a delta's base digest is the CRC-32C of
    /// the base as a standalone value (tag, length, bytes), whatever the value's size.
    @Test func theBaseDigestOfAStringIsItsStandaloneValuesCRC() {
        let zone = RecordZone.ID(name: "notes")
        #expect(SparseRecord.FieldDelta.digest(of: .string("hello world"), zone: zone) == 0x323C_E5F2)
        #expect(
            SparseRecord.FieldDelta.digest(of: .string("hello world"), zone: zone)
                == CRC32C.checksum([0x01, 0x0B] + Array("hello world".utf8)))
        let long = [UInt8](repeating: 7, count: 300)
        #expect(
            SparseRecord.FieldDelta.digest(of: .bytes(long), zone: zone) == CRC32C.checksum([0x05, 0xAC, 0x02] + long))
        let list = FieldValue.list(.int64([1, -1]))
        #expect(SparseRecord.FieldDelta.digest(of: list, zone: zone) == CRC32C.checksum([0x42, 0x02, 0x02, 0x01]))
    }

    /// A delta slot is applied only to the value its digest names: the same stamp with another
    /// value (a damaged or foreign copy) is refused, and so is an edit that does not fit it.
    @Test func aDeltaSlotAppliesOnlyToItsBaseValue() throws {
        let zone = RecordZone.ID(name: "notes")
        let node = NodeID(high: 1, low: 2)
        let t0 = HLC(rawValue: 100), t1 = HLC(rawValue: 200)
        let text = String(repeating: "abcdefghij", count: 100)
        var base = Record(recordType: "Note", id: Record.ID(name: "n", zone: zone))
        base["body"] = .string(text)
        base = Stamping.saved(base, by: node, at: t0)
        var next = base
        var edited = Array(text.utf8)
        edited[500] = UInt8(ascii: "X")
        next["body"] = .string(String(decoding: edited, as: UTF8.self))
        next = Stamping.saved(next, by: node, at: t1)
        let k = base.versionVector
        var sparse = try #require(SparseRecord(next, base: k))
        #expect(sparse.encodeEdits(against: base, base: k) == 1 && sparse.fields.isEmpty)
        #expect(Record(expanding: sparse, base: k, onto: base)?.encoded() == next.encoded())
        // Same stamp, another value: the digest differs.
        var forged = base
        forged["body"] = .string(String(repeating: "0123456789", count: 100))
        forged = Record(
            recordType: forged.recordType, id: forged.id, parent: nil, creation: base.creation,
            versionVector: base.versionVector,
            heads: base.heads,
            fields: forged.fields.map { Record.Field(name: $0.name, value: $0.value, stamp: Dot(node: node, hlc: t0)) },
            extensions: [])
        #expect(Record(expanding: sparse, base: k, onto: forged) == nil)
        // The right digest, an edit past the value's end: refused, not trapped.
        guard case .patch(let edits)? = sparse.deltas.first?.edit else { Issue.record("expected a patch"); return }
        sparse.deltas[0].edit = .patch(
            edits.map {
                RecordDelta.BytePatch(offset: $0.offset + 5_000, deleteCount: $0.deleteCount, insert: $0.insert)
            })
        #expect(Record(expanding: sparse, base: k, onto: base) == nil)
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
        merged.heads = [
            Record.Head(node: MergeTests.nodeA, isDeletion: true),
            Record.Head(node: MergeTests.nodeB, isDeletion: false)
        ]
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
        let local = Record(
            recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(b, 100),
            versionVector: VersionVector([(b, HLC(rawValue: 100))]), heads: [Record.Head(node: b, isDeletion: false)],
            fields: [Record.Field(name: "x", value: .int64(1), stamp: MergeTests.dot(b, 100))], extensions: [])
        // The sender's: A's lineage (created later, edited) merged with B's.
        let sender = Record(
            recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(a, 200),
            versionVector: VersionVector([(a, HLC(rawValue: 250)), (b, HLC(rawValue: 100))]),
            heads: [Record.Head(node: a, isDeletion: false), Record.Head(node: b, isDeletion: false)],
            fields: [
                Record.Field(name: "x", value: .int64(1), stamp: MergeTests.dot(b, 100)),
                Record.Field(name: "y", value: .int64(2), stamp: MergeTests.dot(a, 250))
            ], extensions: [])
        // Both sides reflect A's writes up to 300: the receiver through a purge horizon only.
        let base = VersionVector([(a, HLC(rawValue: 300)), (b, HLC(rawValue: 100))])
        let sparse = try #require(SparseRecord(sender, base: base))
        #expect(Record(expanding: sparse, base: base, onto: local) == nil)
        // The same sparse record rebuilds on a copy that holds what it left out.
        #expect(Record(expanding: sparse, base: base, onto: sender) == sender)
    }

    /// An entry at or below the base that is no head travels too: a receiver holding another
    /// lineage is refused by it (before, only heads' entries travelled, and this rebuilt).
    @Test func anEntryBelowTheBaseShowsAnotherLineage() throws {
        let a = MergeTests.nodeA, b = MergeTests.nodeB, c = NodeID(high: 0xC, low: 3)
        let id = Record.ID(name: "r", zone: MergeTests.zone)
        let local = Record(
            recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(b, 100),
            versionVector: VersionVector([(b, HLC(rawValue: 100))]), heads: [Record.Head(node: b, isDeletion: false)],
            fields: [Record.Field(name: "x", value: .int64(1), stamp: MergeTests.dot(b, 100))], extensions: [])
        // Created by C, then edited by A: C's entry is no head.
        let sender = Record(
            recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(c, 50),
            versionVector: VersionVector([(a, HLC(rawValue: 250)), (c, HLC(rawValue: 50))]),
            heads: [Record.Head(node: a, isDeletion: false)],
            fields: [
                Record.Field(name: "y", value: .int64(2), stamp: MergeTests.dot(a, 250)),
                Record.Field(name: "z", value: .int64(3), stamp: MergeTests.dot(c, 50))
            ], extensions: [])
        let base = VersionVector([(a, HLC(rawValue: 200)), (b, HLC(rawValue: 100)), (c, HLC(rawValue: 100))])
        let sparse = try #require(SparseRecord(sender, base: base))
        #expect(sparse.entries == sender.versionVector)
        #expect(Record(expanding: sparse, base: base, onto: local) == nil)
    }

    /// A save merged onto an older version of its lineage, whose entry lies above the base while
    /// an omitted slot and the creation lie below it: a receiver holding another lineage of the
    /// name never held that slot, and the digest refuses it (the shape of a purge-simulation seed).
    @Test func anOmittedSlotAnotherLineageLacksIsRefused() throws {
        let a = MergeTests.nodeA, b = MergeTests.nodeB
        let id = Record.ID(name: "r", zone: MergeTests.zone)
        let sender = Record(
            recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(a, 100),
            versionVector: VersionVector([(a, HLC(rawValue: 300))]), heads: [Record.Head(node: a, isDeletion: false)],
            fields: [
                Record.Field(name: "alpha", value: .int64(1), stamp: MergeTests.dot(a, 100)),
                Record.Field(name: "beta", value: .int64(2), stamp: MergeTests.dot(a, 300))
            ], extensions: [])
        let base = VersionVector([(a, HLC(rawValue: 200)), (b, HLC(rawValue: 50))])
        let sparse = try #require(SparseRecord(sender, base: base))
        #expect(sparse.fields.map(\.name) == ["beta"])
        // Another lineage of the name, which reflects A's writes up to 200 only through a purge.
        let other = Record(
            recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(b, 50),
            versionVector: VersionVector([(b, HLC(rawValue: 50))]), heads: [Record.Head(node: b, isDeletion: false)],
            fields: [Record.Field(name: "gamma", value: .int64(3), stamp: MergeTests.dot(b, 50))], extensions: [])
        #expect(Record(expanding: sparse, base: base, onto: other) == nil)
        // The sender's earlier version rebuilds to the sender's exactly.
        let earlier = Record(
            recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(a, 100),
            versionVector: VersionVector([(a, HLC(rawValue: 100))]), heads: [Record.Head(node: a, isDeletion: false)],
            fields: [Record.Field(name: "alpha", value: .int64(1), stamp: MergeTests.dot(a, 100))], extensions: [])
        #expect(Record(expanding: sparse, base: base, onto: earlier) == sender)
    }

    /// A deletion the receiver has not seen removed a slot it holds: the sender merged the
    /// deletion with a concurrent save (a deletion head, so that version travelled whole to
    /// whoever was sent it) and then saved again, which leaves no deletion head. The sparse
    /// record omits the field the deletion removed; the receiver's copy still holds it, so the
    /// digest refuses the copy — rebuilt on it, the field would have come back.
    @Test func aSlotAnUnseenDeletionRemovedIsRefused() throws {
        let a = MergeTests.nodeA, b = MergeTests.nodeB, c = NodeID(high: 0xC, low: 3)
        let id = Record.ID(name: "r", zone: MergeTests.zone)
        func slot(_ name: String, _ v: Int64, _ n: NodeID, _ t: UInt64) -> Record.Field {
            Record.Field(name: name, value: .int64(v), stamp: MergeTests.dot(n, t))
        }
        // Everyone holds this version: x and y written by A at 100.
        let common = Record(
            recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(a, 100),
            versionVector: VersionVector([(a, HLC(rawValue: 100))]), heads: [Record.Head(node: a, isDeletion: false)],
            fields: [slot("x", 1, a, 100), slot("y", 2, a, 100)], extensions: [])
        // B deletes at 200 (no fields); C saves y at 210, concurrently; the merge keeps only C's y.
        let deletion = Record(
            recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(a, 100),
            versionVector: VersionVector([(a, HLC(rawValue: 100)), (b, HLC(rawValue: 200))]),
            heads: [Record.Head(node: b, isDeletion: true)], fields: [], extensions: [])
        let save = Record(
            recordType: "Note", id: id, parent: nil, creation: MergeTests.dot(a, 100),
            versionVector: VersionVector([(a, HLC(rawValue: 100)), (c, HLC(rawValue: 210))]),
            heads: [Record.Head(node: c, isDeletion: false)],
            fields: [common.fields[0], slot("y", 3, c, 210)], extensions: [])
        var sender = try merge(deletion, save)
        #expect(sender.fields.map(\.name) == ["y"])
        // C saves z at 300 over the merge: one save head, no deletion head.
        sender = Record(
            recordType: "Note", id: id, parent: nil, creation: sender.creation,
            versionVector: VersionVector([(a, HLC(rawValue: 100)), (b, HLC(rawValue: 200)), (c, HLC(rawValue: 300))]),
            heads: [Record.Head(node: c, isDeletion: false)], fields: sender.fields + [slot("z", 4, c, 300)],
            extensions: [])
        // The receiver holds C's save at 210 (so the base reaches it) and not B's deletion.
        let base = VersionVector([(a, HLC(rawValue: 100)), (c, HLC(rawValue: 210))])
        let sparse = try #require(SparseRecord(sender, base: base))
        #expect(sparse.fields.map(\.name) == ["z"])
        #expect(Record(expanding: sparse, base: base, onto: save) == nil)
        // Merged whole, x stays removed.
        #expect(try merge(save, sender).fields.map(\.name) == ["y", "z"])
        // A copy that has seen the deletion rebuilds the sender's version.
        #expect(Record(expanding: sparse, base: base, onto: try merge(deletion, save)) == sender)
    }
}
