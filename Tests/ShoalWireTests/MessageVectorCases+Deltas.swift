// MessageVectorCases+Deltas: messages.json cases for delta slots in sparse items and for the
// want-whole message (Spec/replication.md §3.5.1 "Delta slots", §3.10).

import Foundation
import Testing
import ShoalSamples
@testable import ShoalWire

extension MessageVectorTests {
    func deltaSlotVectors(
        valid: (String, String, [UInt8]) throws -> Void,
        sparse: (String, String, [UInt8], [SparseOmission]) throws -> Void,
        invalid: (String, String, [UInt8]) -> Void
    ) throws {
        typealias W = SparseWire
        // A note created by A before the base, its body "hello world" and its scores [1, 2, 3]
        // written then; A's write at t1 changes one character of the body and inserts into the list.
        let omitted = SparseOmission.created(by: W.a, 2)
        let created = omitted.creation
        let patch = SparseRecord.FieldDelta(
            name: "body", stamp: Dot(node: W.a, hlc: W.t1), baseStamp: created,
            baseDigest: SparseRecord.FieldDelta.digest(of: .string("hello world"), zone: W.zone),
            edit: .patch([RecordDelta.BytePatch(offset: 5, deleteCount: 1, insert: Array("_".utf8))]))
        let splice = SparseRecord.FieldDelta(
            name: "scores", stamp: Dot(node: W.a, hlc: W.t1), baseStamp: created,
            baseDigest: SparseRecord.FieldDelta.digest(of: .list(.int64([1, 2, 3])), zone: W.zone),
            edit: .splice(kind: .int64, [RecordDelta.ListSplice(offset: 1, deleteCount: 0, insert: .int64([9]))]))
        var item = W.record("note-d", fields: [])
        item.deltas = [patch, splice]
        item = omitted.digesting(item)
        let good = W.message([item]).encoded()
        try sparse("changes-sparse-delta-slots", "changes", good, [omitted])

        // The base stamp above the base: the receiver need not hold that slot.
        var above = item
        above.deltas = [
            SparseRecord.FieldDelta(
                name: "body", stamp: Dot(node: W.a, hlc: W.t1),
                baseStamp: Dot(node: W.a, hlc: HLC(rawValue: W.t1.rawValue - 1)),
                baseDigest: 0, edit: patch.edit)
        ]
        invalid("changes-sparse-delta-slot-base-above-base", "changes", W.message([above]).encoded())
        // A delta slot and a whole slot of one field.
        var repeated = item
        repeated.deltas = [patch]
        repeated.fields = [
            Record.Field(
                name: "body", value: .string("x"), stamp: Dot(node: W.a, hlc: HLC(rawValue: W.t1.rawValue - 5)))
        ]
        invalid("changes-sparse-delta-slot-repeated-field", "changes", W.message([repeated]).encoded())
        // A patch body with no edits, and one whose target kind is not 5: the §7.4 rules hold.
        var empty = item
        empty.deltas = [
            SparseRecord.FieldDelta(
                name: "body", stamp: patch.stamp, baseStamp: created, baseDigest: 0, edit: .patch([]))
        ]
        invalid("changes-sparse-delta-slot-empty-patch", "changes", W.message([empty]).encoded())
        var kind = W.message([item]).encoded()
        // The patch body's target kind byte follows the base digest: find it by re-encoding with a
        // marker digest.
        var marked = item
        marked.deltas[0].baseDigest = 0xA5A5_A5A5
        let markedBytes = W.message([marked]).encoded()
        if let at = (0..<(markedBytes.count - 4)).first(where: { markedBytes[$0..<($0 + 4)].allSatisfy { $0 == 0xA5 } })
        {
            kind = markedBytes
            kind[at + 4] = 0x01
            invalid("changes-sparse-delta-slot-patch-kind", "changes", kind)
        }

        // want-whole.
        let names = ["note-1", "note-12", "日記"]
        try valid("want-whole", "wantWhole", WantWholeMessage(zone: W.zone, incarnation: W.inc, names: names).encoded())
        let head = WireWriter.encode(size: WireSize.zoneID(W.zone) + 16) { w in
            w.writeZoneID(W.zone)
            w.writeNodeID(W.inc)
        }
        invalid("want-whole-empty", "wantWhole", head + [0])
        invalid("want-whole-unsorted", "wantWhole", head + [2] + W.str("note-2") + W.str("note-12"))
        invalid("want-whole-duplicate", "wantWhole", head + [2] + W.str("note-2") + W.str("note-2"))
        invalid("want-whole-empty-name", "wantWhole", head + [1] + W.str("") + [0])
    }
}
